"""The SFT core does not load the RL trainers: importing lib.sft_loop (or lib.train_loop) leaves
lib.grpo, lib.opsd and lib.rl_trainer out of sys.modules. Checked in a fresh interpreter, since
this test process may already have imported them."""
import pathlib
import subprocess
import sys

import pytest

RL_MODULES = ("lib.grpo", "lib.opsd", "lib.rl_trainer")
ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("module", ["lib.sft_loop", "lib.train_loop"])
def test_sft_core_imports_no_rl_trainer(module):
  code = (f"import sys, {module}; "
          f"print(','.join(m for m in {RL_MODULES!r} if m in sys.modules))")
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
  assert out.returncode == 0, out.stderr
  assert out.stdout.strip() == "", f"{module} loads {out.stdout.strip()}"
