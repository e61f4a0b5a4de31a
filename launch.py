r"""The single entry point of every Accord experiment.

  python launch.py --config=configs/smoke.py:debug=True --workdir=runs/smoke \
      [--config.a.b=value ...] [--sweep | --sweep_print]

`config.experiment` names an entry of `experiments/registry.py`; its `run(config, workdir)` is
called after the resolved `config.json`, an absl log file (`<workdir>/log.txt`) and the run's
TensorBoard writer (`<workdir>/tb`) are set up. A config module may define `sweep(add, arg)`:
`--sweep` runs every point in turn into `<workdir>/<index>_<key=value,...>`, `--sweep_print`
prints one launch command per point for a cluster scheduler instead.

Multi-host: pass --jax_coordinator=host:port --jax_num_processes=N --jax_process_id=i (same
command on every host) and `jax.distributed.initialize` is called before anything touches JAX.
"""
import copy
import importlib.util
import logging as std_logging
import os
import shlex
import sys
import time

from absl import app, flags, logging
from ml_collections import config_flags

from configs import common
from experiments import registry
from lib import tb

_CONFIG = config_flags.DEFINE_config_file("config", None, "Config file, path[:key=value,...].")
_WORKDIR = flags.DEFINE_string("workdir", None, "Directory for this run's outputs.")
_SWEEP = flags.DEFINE_bool("sweep", False, "Run every point of the config's sweep().")
_SWEEP_PRINT = flags.DEFINE_bool("sweep_print", False, "Print one command per sweep point.")
_COORD = flags.DEFINE_string("jax_coordinator", None, "host:port of process 0 (multi-host).")
_NPROC = flags.DEFINE_integer("jax_num_processes", None, "Number of processes (multi-host).")
_PID = flags.DEFINE_integer("jax_process_id", None, "This process's index (multi-host).")


class LaunchError(ValueError):
  """A bad command line; printed as one line."""


def _load_config_module(spec: str):
  path, _, arg = spec.partition(":")
  if not os.path.exists(path):
    raise LaunchError(f"config file {path!r} does not exist")
  module_spec = importlib.util.spec_from_file_location("_launch_config", path)
  module = importlib.util.module_from_spec(module_spec)
  module_spec.loader.exec_module(module)
  return module, path, (arg or None)


def _get_path(config, dotted: str):
  node = config
  parts = dotted.split(".")
  for i, part in enumerate(parts):
    keys = list(node.keys()) if hasattr(node, "keys") else []
    if part not in keys:
      where = ".".join(parts[:i]) or "config"
      raise LaunchError(f"unknown config field {dotted!r}: {where} has "
                        f"{', '.join(sorted(keys)) or 'no fields'}")
    if i < len(parts) - 1:
      node = node[part]
  return node, parts[-1]


def _set_path(config, dotted: str, value) -> None:
  node, leaf = _get_path(config, dotted)
  node[leaf] = value


def _preflight(argv: list[str]) -> tuple:
  """Checks config arg, override fields and experiment name; raises LaunchError."""
  spec = None
  overrides = []
  for a in argv[1:]:
    if a.startswith("--config="):
      spec = a.split("=", 1)[1]
    elif a.startswith("--config."):
      overrides.append(a[len("--config."):].split("=", 1)[0])
  if spec is None:
    raise LaunchError("missing --config=configs/<file>.py[:key=value,...]")
  module, path, arg = _load_config_module(spec)
  try:
    config = module.get_config(arg) if arg is not None else module.get_config()
  except common.ConfigArgError as e:
    raise LaunchError(str(e)) from None
  for dotted in overrides:
    _get_path(config, dotted)
  name = config.get("experiment")
  if name not in registry.EXPERIMENTS:
    raise LaunchError(f"unknown experiment {name!r}; valid: {', '.join(registry.names())}")
  return module, spec, arg


def sweep_points(module, arg) -> list[dict]:
  points: list[dict] = []
  if not hasattr(module, "sweep"):
    raise LaunchError("this config defines no sweep(add, arg)")
  module.sweep(lambda **kv: points.append(kv), arg)
  return points


def point_dirname(index: int, point: dict) -> str:
  text = ",".join(f"{k}={v}" for k, v in point.items())
  safe = "".join(ch if ch.isalnum() or ch in "=,.-_" else "_" for ch in text)
  return f"{index:02d}_{safe}"[:120]


def run_one(config, workdir: str):
  """Sets up the run directory, logging and TensorBoard, then calls the experiment."""
  os.makedirs(workdir, exist_ok=True)
  with open(os.path.join(workdir, "config.json"), "w", encoding="utf-8") as f:
    f.write(config.to_json_best_effort(indent=2, sort_keys=True))
  handler = std_logging.FileHandler(os.path.join(workdir, "log.txt"))
  handler.setFormatter(std_logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
  logging.get_absl_logger().addHandler(handler)
  logging.set_verbosity(logging.INFO)
  tb.writer(workdir)
  run = registry.get(config.experiment)
  start = time.time()
  logging.info("experiment %s -> %s", config.experiment, workdir)
  try:
    result = run(config, workdir)
  finally:
    tb.close(workdir)
    logging.get_absl_logger().removeHandler(handler)
    handler.close()
  outputs = sorted(os.listdir(workdir))
  print(f"[launch] {config.experiment} finished in {time.time() - start:.1f}s; "
        f"results in {workdir}: {', '.join(outputs)}", flush=True)
  return result


def main(argv) -> None:
  del argv
  if _COORD.value:
    import jax
    jax.distributed.initialize(_COORD.value, _NPROC.value, _PID.value)
  if not _WORKDIR.value:
    raise app.UsageError("--workdir is required")
  config = _CONFIG.value
  if not (_SWEEP.value or _SWEEP_PRINT.value):
    run_one(config, _WORKDIR.value)
    return
  module, spec, arg = _MODULE_INFO
  points = sweep_points(module, arg)
  base_overrides = [a for a in sys.argv[1:] if a.startswith("--config.")]
  for i, point in enumerate(points):
    sub = os.path.join(_WORKDIR.value, point_dirname(i, point))
    if _SWEEP_PRINT.value:
      extra = [f"--config.{k}={v}" for k, v in point.items()]
      cmd = ["python", "launch.py", f"--config={spec}", f"--workdir={sub}", *base_overrides,
             *extra]
      print(" ".join(shlex.quote(c) for c in cmd))
      continue
    cfg = copy.deepcopy(config)
    for k, v in point.items():
      _set_path(cfg, k, v)
    print(f"[launch] sweep point {i + 1}/{len(points)}: {point}", flush=True)
    run_one(cfg, sub)


_MODULE_INFO = None

if __name__ == "__main__":
  try:
    _MODULE_INFO = _preflight(sys.argv)
    if any(a in ("--sweep", "--sweep_print") for a in sys.argv):
      sweep_points(*_MODULE_INFO[::2])
  except LaunchError as e:
    print(f"launch.py: error: {e}", file=sys.stderr)
    sys.exit(2)
  app.run(main)
