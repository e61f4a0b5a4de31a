"""launch.py end to end in subprocesses: errors, config.json, TensorBoard, resume, sweeps."""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _launch(*args):
  env = dict(os.environ, JAX_PLATFORMS="cpu")
  return subprocess.run([sys.executable, "launch.py", *args], cwd=ROOT, env=env,
                        capture_output=True, text=True, timeout=300)


def test_smoke_run_writes_config_logs_results_summary_and_tb(tmp_path):
  wd = str(tmp_path / "run")
  r = _launch("--config=configs/smoke.py:debug=True", f"--workdir={wd}", "--config.seed=3")
  assert r.returncode == 0, r.stderr
  cfg = json.load(open(os.path.join(wd, "config.json")))
  assert cfg["seed"] == 3 and cfg["experiment"] == "smoke"
  assert os.path.getsize(os.path.join(wd, "log.txt")) > 0
  assert any(f.startswith("events.out.tfevents") for f in os.listdir(os.path.join(wd, "tb")))
  rows = open(os.path.join(wd, "results.jsonl")).read().splitlines()
  assert len(rows) == cfg["tasks"] * cfg["attempts"]
  assert "| k | pass@k | pass^k |" in open(os.path.join(wd, "summary.md")).read()
  # Resume: a second run into the same workdir redoes nothing.
  r = _launch("--config=configs/smoke.py:debug=True", f"--workdir={wd}", "--config.seed=3")
  assert r.returncode == 0, r.stderr
  summary = json.load(open(os.path.join(wd, "summary.json")))["summary"]
  assert summary["skipped_on_resume"] == len(rows)
  assert len(open(os.path.join(wd, "results.jsonl")).read().splitlines()) == len(rows)


def _one_line_error(r):
  assert r.returncode == 2
  lines = [l for l in r.stderr.strip().splitlines() if l]
  assert len(lines) == 1, r.stderr
  return lines[0]


def test_unknown_override_field_lists_valid_fields(tmp_path):
  line = _one_line_error(_launch("--config=configs/smoke.py", f"--workdir={tmp_path}",
                                 "--config.atempts=3"))
  assert "unknown config field 'atempts'" in line and "attempts" in line and "seed" in line


def test_unknown_config_arg_lists_valid_args(tmp_path):
  line = _one_line_error(_launch("--config=configs/smoke.py:debugg=True",
                                 f"--workdir={tmp_path}"))
  assert "unknown config arg 'debugg'; valid: attempts, debug, tasks" in line


def test_unknown_experiment_lists_registry(tmp_path):
  cfg = tmp_path / "bad.py"
  cfg.write_text("import ml_collections\n"
                 "def get_config(arg=None):\n"
                 "  return ml_collections.ConfigDict({'experiment': 'nope', 'seed': 0})\n")
  line = _one_line_error(_launch(f"--config={cfg}", f"--workdir={tmp_path}"))
  assert "unknown experiment 'nope'; valid:" in line and "smoke" in line


def test_sweep_print_and_sweep_run(tmp_path):
  r = _launch("--config=configs/smoke.py:debug=True", f"--workdir={tmp_path}", "--sweep_print")
  assert r.returncode == 0, r.stderr
  cmds = r.stdout.strip().splitlines()
  assert len(cmds) == 2 and all(c.startswith("python launch.py --config=") for c in cmds)
  assert cmds[1].endswith("--config.attempts=8")
  r = _launch("--config=configs/smoke.py:debug=True", f"--workdir={tmp_path}", "--sweep")
  assert r.returncode == 0, r.stderr
  for sub, attempts in (("00_attempts=4", 4), ("01_attempts=8", 8)):
    cfg = json.load(open(tmp_path / sub / "config.json"))
    assert cfg["attempts"] == attempts
    assert len((tmp_path / sub / "results.jsonl").read_text().splitlines()) == 8 * attempts
