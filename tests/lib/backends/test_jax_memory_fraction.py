"""JAX beside in-process vLLM: `backend.jax_memory_fraction` (lib/backends/factory.py) becomes
XLA_PYTHON_CLIENT_MEM_FRACTION in launch.py before JAX starts, unless the environment sets it."""
import os
import subprocess
import sys

import ml_collections
import pytest

from lib.backends import factory
from lib.run import config_blocks

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def _config(**backend):
  return ml_collections.ConfigDict({"backend": backend})


def test_fraction_only_for_in_process_vllm_flat_or_sectioned():
  assert factory.jax_memory_fraction(_config(**config_blocks.backend_config("vllm"))) == 0.10
  sectioned = config_blocks.backends_config("vllm", vllm=dict(jax_memory_fraction=0.05))
  assert factory.jax_memory_fraction(_config(**sectioned)) == 0.05
  assert factory.jax_memory_fraction(_config(**config_blocks.backend_config("openai_http"))) is None
  assert factory.jax_memory_fraction(ml_collections.ConfigDict({"seed": 0})) is None
  too_much = config_blocks.backend_config("vllm", jax_memory_fraction=0.2)   # 0.2 + 0.85 >= 1
  with pytest.raises(ValueError, match="their sum must be < 1"):
    factory.jax_memory_fraction(_config(**too_much))


def test_launch_sets_the_env_var_unless_the_user_did():
  code = ("import os, sys; sys.argv = ['launch.py']; import launch, ml_collections; "
          "c = ml_collections.ConfigDict({'backend': {'kind': 'vllm', "
          "'gpu_memory_utilization': 0.85, 'jax_memory_fraction': 0.1}}); "
          "launch.set_jax_memory_fraction(c); print(os.environ['XLA_PYTHON_CLIENT_MEM_FRACTION']); "
          "os.environ['XLA_PYTHON_CLIENT_MEM_FRACTION'] = '0.3'; "
          "launch.set_jax_memory_fraction(c); print(os.environ['XLA_PYTHON_CLIENT_MEM_FRACTION'])")
  env = {k: v for k, v in os.environ.items() if k != "XLA_PYTHON_CLIENT_MEM_FRACTION"}
  out = subprocess.run([sys.executable, "-c", code], env=dict(env, PYTHONPATH=ROOT), cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
  assert out.returncode == 0, out.stderr[-2000:]
  assert out.stdout.split() == ["0.1", "0.3"], out.stdout     # set, then the user's value wins
