"""Puts the repository root on sys.path so tests import `lib`, `envs`, ... without installation,
compiles the CPU tests' programs without LLVM optimisation, and shares one persistent compilation
cache across the run's processes (see below)."""
import atexit
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("JAX_PLATFORMS", "cpu")
# The tests' programs are tiny and compile-bound, and most of an XLA CPU compile is LLVM's
# optimisation of the generated code: -O0 runs the same HLO (same results up to float rounding)
# and cuts the suite's CPU time by about a third. Set before JAX starts; subprocesses inherit it
# (tests that force 8 host devices append to XLA_FLAGS; test_train_sharding.py's child keeps the
# default level, see there). Accelerator runs keep full optimisation.
if (os.environ["JAX_PLATFORMS"] == "cpu"
    and "xla_backend_optimization_level" not in os.environ.get("XLA_FLAGS", "")):
  os.environ["XLA_FLAGS"] = " ".join(
      [os.environ.get("XLA_FLAGS", ""), "--xla_backend_optimization_level=0"]).strip()
# One persistent compilation cache per test run: many tests compile the same small programs
# (same model, same shapes), and a cache hit skips XLA's compile (12% of the CPU time of the
# sampler/SFT/GRPO tests measured alone). The process that starts the run (the xdist
# controller) makes the directory before its workers start; they and the subprocesses they
# launch inherit it, and it is removed when that process exits, so no run reads another's.
if "JAX_COMPILATION_CACHE_DIR" not in os.environ:
  os.environ["JAX_COMPILATION_CACHE_DIR"] = tempfile.mkdtemp(prefix="accord-jax-cache-")
  atexit.register(shutil.rmtree, os.environ["JAX_COMPILATION_CACHE_DIR"], ignore_errors=True)


def pytest_collection_modifyitems(config, items):
  """Modules marked `long_module(seconds)` first, longest first; the rest in collection order.

  xdist (`--dist loadscope`, pytest.ini) hands whole modules to the two workers round-robin at
  the start, so the longest modules run side by side from the first minute (longest-processing-
  time-first) instead of one of them being the tail of the run."""
  def seconds(item):
    mark = item.get_closest_marker("long_module")
    return -mark.args[0] if mark else 0
  items.sort(key=seconds)
