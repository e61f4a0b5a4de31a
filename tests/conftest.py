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
  """Tests in an `xdist_group` come first, in collection order otherwise.

  A group is a module whose tests share one long module-scoped fixture (the debug studies, ~2-3
  min each). `--dist loadgroup` (pytest.ini) keeps a group on one xdist worker: under plain
  `load` its tests were split over both workers and each ran the fixture. Starting the groups
  first hands the first one to each worker at the start of the run, so neither is still running
  after the short tests are done."""
  items.sort(key=lambda item: item.get_closest_marker("xdist_group") is None)
