r"""The single entry point of every Accord experiment.

  python launch.py --config=configs/smoke.py:debug=True --workdir=runs/smoke \
      [--config.a.b=value ...] [--sweep | --sweep_print] [--verbose] [--plan]
  python launch.py --help                          # registered experiments and config files
  python launch.py --config=configs/smoke.py --help   # that config's :args and fields

`config.experiment` names an entry of `experiments/registry.py`; its `run(config, workdir)` is
called after the resolved `config.json`, an absl log file (`<workdir>/log.txt`) and the run's
TensorBoard writer (`<workdir>/tb`) are set up. A config module may define `sweep(add, arg)`:
`--sweep` runs every point in turn into `<workdir>/<index>_<key=value,...>`, `--sweep_print`
prints one launch command per point for a cluster scheduler instead.

Before anything is created, the whole command line is checked: a bad config file, `:arg`, override,
experiment name, workdir, or a configured input path (`*checkpoint`, `*_dir`, `*path` fields,
`dir/file.jsonl`-like values) that does not exist stops the launch with one line on stderr and exit
code 2. The console shows warnings, progress bars (on a terminal) and, at the end, the summary table
and figure paths (lib/run/console.py); the run's INFO lines go to log.txt only and other libraries'
INFO lines (orbax's checkpoint internals, ...) nowhere, unless `--verbose`.

Multi-host: pass --jax_coordinator=host:port --jax_num_processes=N --jax_process_id=i (same command
on every host), or --jax_coordinator=auto on a cluster JAX detects (Cloud TPU, SLURM, Open MPI), and
`lib.parallel.distributed.initialize` joins the run before anything touches a JAX backend
(docs/running.md#multi-host).
"""
import ast
import copy
import importlib.util
import os
import shlex
import sys
import tempfile
import time

from lib.run import console  # first: it silences banners of the libraries imported below

console.quiet_import_banners(sys.argv)

# pylint: disable=wrong-import-position
from absl import app, flags, logging
from ml_collections import config_flags

from configs import common
from experiments import registry
from lib.backends import factory
from lib.parallel import distributed
from lib.plan import memory_plan
from lib.plan.launch_checks import LaunchError, check_input_paths, config_fields
from lib.run import run_env, tb
from lib.train.checkpoint import CheckpointError

_CONFIG = config_flags.DEFINE_config_file("config", None, "Config file, path[:key=value,...].")
_WORKDIR = flags.DEFINE_string("workdir", None, "Directory for this run's outputs.")
_SWEEP = flags.DEFINE_bool("sweep", False, "Run every point of the config's sweep().")
_SWEEP_PRINT = flags.DEFINE_bool("sweep_print", False, "Print one command per sweep point.")
_VERBOSE = flags.DEFINE_bool("verbose", False, "INFO logs on the console, libraries' too.")
_COORD = flags.DEFINE_string("jax_coordinator", None,
                             "host:port of process 0, or auto (multi-host).")
_NPROC = flags.DEFINE_integer("jax_num_processes", None, "Number of processes (multi-host).")
_PID = flags.DEFINE_integer("jax_process_id", None, "This process's index (multi-host).")
_PLAN = flags.DEFINE_bool("plan", False, "Write <workdir>/plan.json (memory per device), no run.")
FLAG_HOLDERS = (_CONFIG, _WORKDIR, _SWEEP, _SWEEP_PRINT, _VERBOSE, _COORD, _NPROC, _PID, _PLAN)

ROOT = os.path.dirname(os.path.abspath(__file__))
_HELP_ARGS = ("--help", "-h", "-?", "--list")


def _first_line(error: BaseException) -> str:
  lines = [l for l in str(error).strip().splitlines() if l.strip()]
  return lines[0].strip() if lines else type(error).__name__


def _load_config_module(spec: str):
  """Imports the config file of "path[:arg]"; returns (module, path, arg or None)."""
  path, _, arg = spec.partition(":")
  if not os.path.isfile(path):
    raise LaunchError(f"config file {path!r} does not exist (python launch.py --list shows them)")
  module_spec = importlib.util.spec_from_file_location("_launch_config", path)
  module = importlib.util.module_from_spec(module_spec)
  try:
    module_spec.loader.exec_module(module)
  except SyntaxError as e:
    raise LaunchError(f"config file {path}, line {e.lineno}: syntax error: {e.msg}") from None
  except Exception as e:  # pylint: disable=broad-except  (any import-time failure of user code)
    raise LaunchError(f"config file {path} fails to import: {type(e).__name__}: "
                      f"{_first_line(e)}") from None
  if not hasattr(module, "get_config"):
    raise LaunchError(f"config file {path} defines no get_config(arg)")
  return module, path, (arg or None)


def _build_config(module, path: str, arg: str | None):
  try:
    return module.get_config(arg) if arg is not None else module.get_config()
  except common.ConfigArgError as e:
    raise LaunchError(str(e)) from None
  except Exception as e:  # pylint: disable=broad-except  (user config code, reported in one line)
    raise LaunchError(f"{path}: get_config failed: {type(e).__name__}: {_first_line(e)}") from None


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


def set_path(config, dotted: str, value) -> None:
  """Sets the dotted field `a.b.c` of `config`; an unknown field raises LaunchError."""
  node, leaf = _get_path(config, dotted)
  node[leaf] = value


def _check_workdir(workdir: str) -> None:
  """The workdir must be (or be creatable as) a writable directory; nothing is left behind."""
  path = os.path.abspath(workdir)
  probe_dir = path
  while not os.path.exists(probe_dir):
    probe_dir = os.path.dirname(probe_dir)
  if not os.path.isdir(probe_dir):
    raise LaunchError(f"--workdir={workdir}: {probe_dir} is a file, not a directory")
  try:
    fd, probe = tempfile.mkstemp(prefix=".launch_probe_", dir=probe_dir)
    os.close(fd)
    os.remove(probe)
  except OSError as e:
    raise LaunchError(f"--workdir={workdir}: {probe_dir} is not writable ({e.strerror})") from None


def check_command_line(argv: list[str]):
  """Checks and parses the whole command line before anything is created.

  Args:
    argv: sys.argv.

  Returns:
    (config module, "path[:arg]" spec, arg) of the config file.

  Raises:
    LaunchError: one line saying what is wrong.
  """
  app.define_help_flags()
  spec, overrides = None, []
  for i, a in enumerate(argv[1:], start=1):
    if a.startswith("--config="):
      spec = a.split("=", 1)[1]
    elif a == "--config" and i + 1 < len(argv):
      spec = argv[i + 1]
    elif a.startswith("--config."):
      overrides.append(a[len("--config."):].split("=", 1)[0])
  if spec is None:
    raise LaunchError("missing --config=configs/<file>.py[:key=value,...] "
                      "(python launch.py --list shows them)")
  module, path, arg = _load_config_module(spec)
  config = _build_config(module, path, arg)
  for dotted in overrides:
    _get_path(config, dotted)
  try:
    flags.FLAGS(argv)
  except flags.Error as e:
    raise LaunchError(_first_line(e)) from None
  if not _WORKDIR.value:
    raise LaunchError("missing --workdir=DIR (where this run writes its outputs)")
  problem = distributed.check_args(_COORD.value, _NPROC.value, _PID.value)
  if problem is not None:
    raise LaunchError(problem)
  config = _CONFIG.value
  name = config.get("experiment")
  if name not in registry.EXPERIMENTS:
    raise LaunchError(f"unknown experiment {name!r}; valid: {', '.join(registry.names())}")
  _check_workdir(_WORKDIR.value)
  check_input_paths(config)
  return module, spec, arg


def _docstring_line(path: str) -> str:
  """First line of a Python file's module docstring, read without importing it."""
  try:
    with open(path, encoding="utf-8") as f:
      tree = ast.parse(f.read())
  except (OSError, SyntaxError):
    return "(unreadable)"
  doc = ast.get_docstring(tree) or ""
  return doc.strip().splitlines()[0] if doc.strip() else ""


def _config_files() -> list[str]:
  """configs/**/*.py files that define get_config, relative to the repository root."""
  found = []
  for folder, _, files in os.walk(os.path.join(ROOT, "configs")):
    for name in files:
      path = os.path.join(folder, name)
      if not name.endswith(".py"):
        continue
      with open(path, encoding="utf-8") as f:
        if "def get_config(" in f.read():
          found.append(os.path.relpath(path, ROOT))
  return sorted(found)


def _listing() -> str:
  width = max(len(n) for n in registry.names())
  lines = ["experiments (config.experiment -> its module's first docstring line):"]
  for name in registry.names():
    module_path = os.path.join(ROOT, *registry.EXPERIMENTS[name].split("."))
    path = module_path + ".py" if os.path.exists(module_path + ".py") else os.path.join(
        module_path, "__init__.py")
    lines.append(f"  {name:<{width}}  {_docstring_line(path)}")
  files = _config_files()
  width = max(len(f) for f in files)
  lines += ["", "config files (--config=FILE[:key=value,...]; add --help for one config's fields):"]
  lines += [f"  {f:<{width}}  {_docstring_line(os.path.join(ROOT, f))}" for f in files]
  return "\n".join(lines)


def _short(value, limit: int = 70) -> str:
  text = repr(value)
  return text if len(text) <= limit else text[:limit - 3] + "..."


def _config_help(spec: str) -> str:
  module, path, arg = _load_config_module(spec)
  with common.record_arg_defaults() as arg_defaults:
    config = _build_config(module, path, arg)
  lines = [f"{path}: {_docstring_line(path)}", "",
           ":args (--config=FILE:key=value,...; defaults):"]
  lines += [f"  {k}={_short(v)}" for k, v in arg_defaults.items()] or ["  (none)"]
  lines += ["", f"fields (--config.<field>=value; as resolved{' for :' + arg if arg else ''}):"]
  lines += [f"  {name} = {_short(value)}" for name, value in config_fields(config)]
  if hasattr(module, "sweep"):
    lines += ["", "defines sweep(): --sweep runs its points, --sweep_print prints them"]
  return "\n".join(lines)


def wants_help(argv: list[str]) -> bool:
  """True when the command line asks for `--help`, `-h` or `--list` (sys.argv)."""
  return any(a in _HELP_ARGS for a in argv[1:])


def help_text(argv: list[str]) -> str:
  """The text of `--help`/`--list`.

  Args:
    argv: sys.argv.

  Returns:
    With `--config=X`: that config's `:args` with defaults and its resolved fields. Otherwise:
    usage, flags, the registered experiments and the config files, each with its first
    docstring line.

  Raises:
    LaunchError: `--config=X` cannot be loaded.
  """
  specs = [a.split("=", 1)[1] for a in argv[1:] if a.startswith("--config=")]
  if specs:
    return _config_help(specs[0])
  lines = [__doc__.strip().splitlines()[0], "",
           "usage: python launch.py --config=FILE[:key=value,...] --workdir=DIR "
           "[--config.<field>=value ...]", "", "flags:"]
  lines += [f"  --{h.name:<18} {flags.FLAGS[h.name].help}" for h in FLAG_HOLDERS]
  return "\n".join(lines + ["", _listing()])


def sweep_points(module, arg) -> list[dict]:
  """The config module's sweep points: one dict of dotted overrides per point."""
  points: list[dict] = []
  if not hasattr(module, "sweep"):
    raise LaunchError("this config defines no sweep(add, arg)")
  module.sweep(lambda **kv: points.append(kv), arg)
  return points


def point_dirname(index: int, point: dict) -> str:
  """`<index>_<key=value,...>`, filesystem-safe and at most 120 characters."""
  text = ",".join(f"{k}={v}" for k, v in point.items())
  safe = "".join(ch if ch.isalnum() or ch in "=,.-_" else "_" for ch in text)
  return f"{index:02d}_{safe}"[:120]


def run_one(config, workdir: str):
  """Checks the memory plan (`plan.check`), sets up the run directory, logging and TensorBoard,
  then calls the experiment."""
  memory_plan.check_before_run(config)   # one line and exit 2 when the plan does not fit
  os.makedirs(workdir, exist_ok=True)
  with open(os.path.join(workdir, "config.json"), "w", encoding="utf-8") as f:
    f.write(config.to_json_best_effort(indent=2, sort_keys=True))
  run_env.write(workdir)       # numerics settings and versions (what reuse of its models checks)
  tb.writer(workdir)
  run = registry.get(config.experiment)
  start = time.time()
  with console.run_logging(workdir, verbose=_VERBOSE.value):
    logging.info("experiment %s -> %s", config.experiment, workdir)
    try:
      result = run(config, workdir)
    finally:
      tb.close(workdir)
  outputs = sorted(os.listdir(workdir))
  print(f"[launch] {config.experiment} finished in {time.time() - start:.1f}s; "
        f"results in {workdir}: {', '.join(outputs)}", flush=True)
  report = console.summary_report(workdir)
  if report:
    print(report, flush=True)
  return result


def set_jax_memory_fraction(config) -> None:
  """XLA_PYTHON_CLIENT_MEM_FRACTION from the config's in-process vLLM backend
  (`backend.jax_memory_fraction`), unless the environment sets it; must run before JAX
  initialises its backend (the plan check and the experiment do that)."""
  try:
    fraction = factory.jax_memory_fraction(config)
  except ValueError as e:
    print(f"launch.py: error: {e}", file=sys.stderr, flush=True)
    raise SystemExit(2) from None
  if fraction is not None:
    os.environ.setdefault("XLA_PYTHON_CLIENT_MEM_FRACTION", str(fraction))


def main(argv) -> None:
  del argv
  set_jax_memory_fraction(_CONFIG.value)
  if _COORD.value:   # before anything touches a JAX backend (nothing above does)
    print(f"[launch] {distributed.initialize(_COORD.value, _NPROC.value, _PID.value)}",
          flush=True)
  config = _CONFIG.value
  if "debug" not in config:  # so config.json and every summary say whether it is a debug run
    debug = common.debug_switch(_CONFIG_SOURCE[0].get_config, _CONFIG_SOURCE[2])
    if debug is not None:
      with config.unlocked():
        config.debug = debug
  if not (_SWEEP.value or _SWEEP_PRINT.value):
    (memory_plan.plan_for_launch if _PLAN.value else run_one)(config, _WORKDIR.value)
    return
  module, spec, arg = _CONFIG_SOURCE
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
      set_path(cfg, k, v)
    print(f"[launch] sweep point {i + 1}/{len(points)}: {point}", flush=True)
    run_one(cfg, sub)


_CONFIG_SOURCE = None  # (config module, "path[:arg]", arg) of this launch, set before app.run

if __name__ == "__main__":
  try:
    if wants_help(sys.argv):
      try:
        print(help_text(sys.argv))
      except BrokenPipeError:  # `launch.py --list | head` closed the pipe early
        pass
      sys.exit(0)
    _CONFIG_SOURCE = check_command_line(sys.argv)
    if _SWEEP.value or _SWEEP_PRINT.value:
      sweep_points(_CONFIG_SOURCE[0], _CONFIG_SOURCE[2])
  except LaunchError as e:
    print(f"launch.py: error: {e}", file=sys.stderr)
    sys.exit(2)
  # The flags are parsed and checked already; app.run only sets up absl and calls main.
  try:
    app.run(main, flags_parser=lambda argv: argv[:1])
  # No intact checkpoint to resume, or an input the experiment found wrong once it could look
  # (a run directory without the model it names): one line naming the way out.
  except (CheckpointError, LaunchError) as e:
    print(f"launch.py: error: {e}", file=sys.stderr)
    sys.exit(2)
