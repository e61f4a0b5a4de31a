"""The SFT core does not load the RL trainers: importing lib.sft.loop (or lib.train.setup) leaves
lib.rl.grpo, lib.rl.opsd and lib.rl.trainer out of sys.modules. Checked in a fresh interpreter,
since this test process may already have imported them."""
import pathlib
import subprocess
import sys

import pytest

RL_MODULES = ("lib.rl.grpo", "lib.rl.opsd", "lib.rl.trainer")
ROOT = pathlib.Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("module", ["lib.sft.loop", "lib.train.setup"])
def test_sft_core_imports_no_rl_trainer(module):
  code = (f"import sys, {module}; "
          f"print(','.join(m for m in {RL_MODULES!r} if m in sys.modules))")
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
  assert out.returncode == 0, out.stderr
  assert out.stdout.strip() == "", f"{module} loads {out.stdout.strip()}"
