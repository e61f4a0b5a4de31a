"""launch.py end to end, one process per command line: one-line errors that create nothing,
--help/--list, config.json, TensorBoard, resume, sweeps. The processes are forked from one server
that has imported launch.py's modules (tests/launch_server.py); one test runs `python launch.py`
itself, so the two are checked to agree."""
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import textwrap

import pytest

from launch_server import LaunchServer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def launch():
  server = LaunchServer(dict(os.environ, JAX_PLATFORMS="cpu"))
  yield server.run
  server.close()


def _python_launch(*args):
  env = dict(os.environ, JAX_PLATFORMS="cpu")
  return subprocess.run([sys.executable, "launch.py", *args], cwd=ROOT, env=env,
                        capture_output=True, text=True, timeout=300)


def test_smoke_run_writes_config_logs_results_summary_and_tb(launch, tmp_path):
  wd = str(tmp_path / "run")
  r = launch("--config=configs/smoke.py:debug=True", f"--workdir={wd}", "--config.seed=3")
  assert r.returncode == 0, r.stderr
  cfg = json.load(open(os.path.join(wd, "config.json")))
  assert cfg["seed"] == 3 and cfg["experiment"] == "smoke"
  env = json.load(open(os.path.join(wd, "run_env.json")))      # numerics settings, versions
  assert "XLA_FLAGS" in env["env"] and env["versions"]["jax"]
  assert os.path.getsize(os.path.join(wd, "log.txt")) > 0
  assert any(f.startswith("events.out.tfevents") for f in os.listdir(os.path.join(wd, "tb")))
  rows = open(os.path.join(wd, "results.jsonl")).read().splitlines()
  assert len(rows) == cfg["tasks"] * cfg["attempts"]
  assert "| k | pass@k | pass^k |" in open(os.path.join(wd, "summary.md")).read()
  # The :debug arg reaches config.json and labels the summary (the config sets no such field).
  assert cfg["debug"] is True and json.load(open(os.path.join(wd, "summary.json")))["debug"]
  assert open(os.path.join(wd, "summary.md")).readline().rstrip().endswith("(debug run)")
  # The console (no TTY: no bars) is short and ends with the summary table; the run's INFO lines
  # are in log.txt only.
  console = (r.stderr + r.stdout).strip().splitlines()
  assert len(console) <= 20 and console[-1].startswith("| 4 |"), r.stderr + r.stdout
  assert "rows present" not in r.stderr
  assert "rows present" in open(os.path.join(wd, "log.txt")).read()
  # Resume: a second run into the same workdir redoes nothing.
  r = launch("--config=configs/smoke.py:debug=True", f"--workdir={wd}", "--config.seed=3")
  assert r.returncode == 0, r.stderr
  summary = json.load(open(os.path.join(wd, "summary.json")))["summary"]
  assert summary["skipped_on_resume"] == len(rows)
  assert len(open(os.path.join(wd, "results.jsonl")).read().splitlines()) == len(rows)


def _one_line_error(r):
  assert r.returncode == 2
  lines = [l for l in r.stderr.strip().splitlines() if l]
  assert len(lines) == 1, r.stderr
  return lines[0]


def test_unknown_override_field_lists_valid_fields(launch, tmp_path):
  line = _one_line_error(launch("--config=configs/smoke.py", f"--workdir={tmp_path}",
                                 "--config.atempts=3"))
  assert "unknown config field 'atempts'" in line and "attempts" in line and "seed" in line


def test_unknown_config_arg_lists_valid_args(launch, tmp_path):
  line = _one_line_error(launch("--config=configs/smoke.py:debugg=True",
                                 f"--workdir={tmp_path}"))
  assert "unknown config arg 'debugg'; valid: attempts, debug, tasks" in line


def test_unknown_experiment_lists_registry(launch, tmp_path):
  cfg = tmp_path / "bad.py"
  cfg.write_text("import ml_collections\n"
                 "def get_config(arg=None):\n"
                 "  return ml_collections.ConfigDict({'experiment': 'nope', 'seed': 0})\n")
  line = _one_line_error(launch(f"--config={cfg}", f"--workdir={tmp_path}"))
  assert "unknown experiment 'nope'; valid:" in line and "smoke" in line


def test_sweep_print_and_sweep_run(launch, tmp_path):
  r = launch("--config=configs/smoke.py:debug=True", f"--workdir={tmp_path}", "--sweep_print")
  assert r.returncode == 0, r.stderr
  cmds = r.stdout.strip().splitlines()
  assert len(cmds) == 2 and all(c.startswith("python launch.py --config=") for c in cmds)
  assert cmds[1].endswith("--config.attempts=8")
  r = launch("--config=configs/smoke.py:debug=True", f"--workdir={tmp_path}", "--sweep")
  assert r.returncode == 0, r.stderr
  for sub, attempts in (("00_attempts=4", 4), ("01_attempts=8", 8)):
    cfg = json.load(open(tmp_path / sub / "config.json"))
    assert cfg["attempts"] == attempts
    assert len((tmp_path / sub / "results.jsonl").read_text().splitlines()) == 8 * attempts


def _error_creates_nothing(launch, tmp_path, *args, workdir=None):
  workdir = workdir or str(tmp_path / "run")
  before = sorted(os.listdir(tmp_path))
  line = _one_line_error(launch(*args, f"--workdir={workdir}"))
  assert not os.path.exists(tmp_path / "run") and sorted(os.listdir(tmp_path)) == before
  return line


def test_unknown_experiment_given_as_override_is_one_line_and_creates_nothing(launch, tmp_path):
  line = _error_creates_nothing(launch, tmp_path, "--config=configs/smoke.py",
                                "--config.experiment=nosuch")
  assert "unknown experiment 'nosuch'; valid:" in line and "gencoord/eval" in line


def test_incomplete_multi_host_flags_are_one_line_and_create_nothing(launch, tmp_path):
  line = _error_creates_nothing(launch, tmp_path, "--config=configs/smoke.py",
                                "--jax_coordinator=127.0.0.1:1234", "--jax_process_id=0")
  assert "needs --jax_num_processes=N and --jax_process_id=i" in line
  line = _error_creates_nothing(launch, tmp_path, "--config=configs/smoke.py",
                                "--jax_coordinator=127.0.0.1:1234", "--jax_num_processes=2",
                                "--jax_process_id=2")
  assert "--jax_process_id=2 is not in [0, --jax_num_processes=2)" in line


def test_bad_override_value_is_one_line(launch, tmp_path):
  line = _error_creates_nothing(launch, tmp_path, "--config=configs/smoke.py",
                                "--config.seed=abc")
  assert "--config.seed=abc" in line


def test_workdir_that_is_a_file_or_not_writable(launch, tmp_path):
  (tmp_path / "afile").write_text("x")
  line = _error_creates_nothing(launch, tmp_path, "--config=configs/smoke.py",
                                workdir=str(tmp_path / "afile"))
  assert "is a file" in line
  line = _error_creates_nothing(launch, tmp_path, "--config=configs/smoke.py",
                                workdir=str(tmp_path / "afile" / "sub"))
  assert "is a file" in line
  locked = tmp_path / "locked"
  locked.mkdir(mode=0o500)
  # root writes anywhere chmod says not to; /sys refuses everyone in containers.
  parent = "/sys" if os.geteuid() == 0 else str(locked)
  try:
    fd, probe = tempfile.mkstemp(dir=parent)
    os.close(fd)
    os.remove(probe)
    pytest.skip(f"{parent} is writable here")
  except OSError:
    pass
  line = _error_creates_nothing(launch, tmp_path, "--config=configs/smoke.py",
                                workdir=os.path.join(parent, "accord_run"))
  assert "is not writable" in line


def test_config_syntax_error_is_one_line(launch, tmp_path):
  cfg = tmp_path / "broken.py"
  cfg.write_text("def get_config(arg=None)\n  return None\n")
  line = _error_creates_nothing(launch, tmp_path, f"--config={cfg}")
  assert f"config file {cfg}, line 1: syntax error" in line


def test_missing_workdir_is_one_line_not_a_usage_dump(launch):
  # `python launch.py` itself, and the forked server's child, give the same status and output.
  real = _python_launch("--config=configs/smoke.py")
  forked = launch("--config=configs/smoke.py")
  assert (real.returncode, real.stdout, real.stderr) == (
      forked.returncode, forked.stdout, forked.stderr)
  line = _one_line_error(real)
  assert line == "launch.py: error: missing --workdir=DIR (where this run writes its outputs)"


def test_fraction_of_an_epoch_parses_as_the_quickstart_validation_period(launch):
  # configs/gencoord/README.md's recipe search sets these from the command line; with int
  # defaults the flag parser refused them ("invalid literal for int() with base 10: '0.25'").
  r = launch("--config=configs/quickstart.py", "--config.train.select.every_epochs=0.25",
             "--config.train.select.min_epochs=1.5")
  assert _one_line_error(r).endswith("missing --workdir=DIR (where this run writes its outputs)")


def test_missing_or_empty_checkpoint_stops_before_any_work(launch, tmp_path):
  line = _error_creates_nothing(launch, tmp_path,
                                "--config=configs/serve.py:checkpoint=/no/such/ckpt")
  assert "config.model.checkpoint='/no/such/ckpt' does not exist" in line
  (tmp_path / "empty").mkdir()
  line = _error_creates_nothing(launch, tmp_path, "--config=configs/serve.py",
                                f"--config.model.checkpoint={tmp_path / 'empty'}")
  assert "is an empty directory" in line
  (tmp_path / "weights").mkdir()
  (tmp_path / "weights" / "model.safetensors").write_text("")
  line = _error_creates_nothing(launch, tmp_path, "--config=configs/serve.py",
                                f"--config.model.checkpoint={tmp_path / 'weights'}")
  assert "no config.json there" in line
  # Nested (backend.model.checkpoint) and in an experiment that would first generate data.
  line = _error_creates_nothing(launch, tmp_path,
                                "--config=configs/conpact/flax.py:checkpoint=/nope")
  assert "config.backend.model.checkpoint='/nope' does not exist" in line
  line = _error_creates_nothing(launch, tmp_path, "--config=configs/gencoord/learned.py",
                                f"--config.model.checkpoint={tmp_path / 'weights'}")
  assert line.startswith("launch.py: error: config.model.checkpoint: ")


def test_console_shows_info_lines_only_with_verbose(launch, tmp_path):
  wd = str(tmp_path / "run")
  r = launch("--config=configs/smoke.py:debug=True", f"--workdir={wd}", "--verbose")
  assert r.returncode == 0, r.stderr
  assert "rows present" in r.stderr


def test_help_and_list_show_experiments_and_config_files(launch):
  for flag in ("--help", "--list"):
    r = launch(flag)
    assert r.returncode == 0, r.stderr
    assert "gencoord/eval" in r.stdout and "wm/data" in r.stdout
    assert ("configs/smoke.py                    Smoke experiment: exercises launch, logging"
            in r.stdout)
    assert "configs/gencoord/learned_common.py" not in r.stdout  # no get_config there
    assert "--verbose" in r.stdout


def test_config_help_lists_args_with_defaults_and_fields(launch):
  r = launch("--config=configs/smoke.py:debug=True", "--help")
  assert r.returncode == 0, r.stderr
  args = r.stdout.split(":args")[1].split("fields")[0]
  assert "debug=False" in args and "tasks=40" in args and "attempts=16" in args
  assert "  attempts = 4\n" in r.stdout and "  experiment = 'smoke'\n" in r.stdout


def test_library_info_logs_are_quiet_unless_verbose():
  script = textwrap.dedent("""
      import logging, os, sysconfig
      from lib.run import console
      f = console.LibraryInfoFilter()
      lib = os.path.join(sysconfig.get_paths()["purelib"], "orbax", "checkpoint", "x.py")
      record = lambda path, level: logging.LogRecord("absl", level, path, 1, "m", (), None)
      print(f.filter(record(lib, logging.INFO)), f.filter(record(lib, logging.WARNING)),
            f.filter(record(os.path.abspath("lib/sft/step.py"), logging.INFO)))
  """)
  r = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True,
                     timeout=300, env=dict(os.environ, JAX_PLATFORMS="cpu"))
  assert r.stdout.split() == ["False", "True", "True"], r.stderr


def test_unusable_checkpoints_are_one_line_naming_start_fresh(launch, tmp_path):
  import glob
  import jax.numpy as jnp
  from lib.train.checkpoint import Checkpointer
  wd = tmp_path / "run"
  ckpt = Checkpointer(str(wd / "ckpt"))
  ckpt.save(1, {"x": jnp.zeros((3,))})
  ckpt.close()
  for f in glob.glob(str(wd / "ckpt" / "1" / "state" / "**" / "d" / "*"), recursive=True):
    with open(f, "r+b") as fh:
      fh.truncate(10)
  args = ("--config=configs/grpo_toy.py:debug=True", f"--workdir={wd}",
          "--config.train.iterations=1")
  line = _one_line_error(launch(*args))
  assert line.startswith("launch.py: error: no intact checkpoint") and "start_fresh=True" in line
  r = launch(*args, "--config.start_fresh=True")
  assert r.returncode == 0, r.stderr
  assert json.load(open(wd / "summary.json"))["summary"]["iterations"] == 1
  assert glob.glob(str(wd / "ckpt.discarded-*"))


def test_default_console_has_no_library_banners_and_verbose_brings_them_back(tmp_path):
  # A venv without torch (the README's quickstart install) and no JAX_PLATFORMS: transformers
  # advises that PyTorch is missing and JAX probes the TPU backend. Neither reaches a default
  # console; --verbose shows both.
  script = textwrap.dedent("""
      import importlib.util, runpy, sys
      find = importlib.util.find_spec
      importlib.util.find_spec = lambda name, *a: None if name == "torch" else find(name, *a)
      sys.argv = ["launch.py"] + sys.argv[1:]
      runpy.run_path("launch.py", run_name="__main__")
  """)
  env = {k: v for k, v in os.environ.items()
         if k not in ("JAX_PLATFORMS", "TRANSFORMERS_NO_ADVISORY_WARNINGS")}
  out = {}
  for flag in ("", "--verbose"):
    wd = tmp_path / f"run{flag}"
    r = subprocess.run([sys.executable, "-c", script, "--config=configs/smoke.py:debug=True",
                        f"--workdir={wd}", *([flag] if flag else [])], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    out[flag] = r.stdout + r.stderr
  assert out[""].startswith("[launch] smoke finished"), out[""][:500]
  assert "PyTorch was not found" in out["--verbose"]
  assert "PyTorch was not found" not in out[""]
  assert "Unable to initialize backend" not in out[""]


def test_libtpu_load_warnings_stay_off_the_console_without_tpu_chips(tmp_path):
  # The [test] venv has libtpu (the [tpu] extra, for compiling TPU plans here). Without chips,
  # JAX's TPU probe makes libtpu print two multi-line warnings on the first backend use; a
  # default run that trains (so JAX starts its backends) shows none of them.
  assert importlib.util.find_spec("libtpu") is not None
  env = {k: v for k, v in os.environ.items()
         if k not in ("JAX_PLATFORMS", "TPU_ACCELERATOR_TYPE", "TPU_WORKER_HOSTNAMES")}
  r = subprocess.run([sys.executable, "launch.py", "--config=configs/grpo_toy.py:debug=True",
                      f"--workdir={tmp_path / 'run'}", "--config.train.iterations=1"], cwd=ROOT,
                     env=env, capture_output=True, text=True, timeout=300)
  assert r.returncode == 0, r.stderr[-2000:]
  assert "TPU_ACCELERATOR_TYPE" not in r.stderr and "TPU_WORKER_HOSTNAMES" not in r.stderr, \
      r.stderr[:1000]


def test_an_input_the_experiment_rejects_is_one_line(launch, tmp_path):
  # The run directory exists (launch's own path check passes) but holds no exported model.
  (tmp_path / "run").mkdir()
  line = _one_line_error(launch("--config=configs/gencoord/sender_fit.py",
                                f"--workdir={tmp_path / 'fit'}",
                                f"--config.run_dir={tmp_path / 'run'}"))
  assert line.startswith("launch.py: error: sender_fit: no trained model at")
