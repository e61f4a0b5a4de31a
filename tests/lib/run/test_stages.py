"""Resumable pipeline stages (lib/run/stages.py): skip on resume, rerun stages, the stages.json
record."""
import json

import pytest

from lib.run import stages as stages_lib
from lib.run.stages import Stages


def _record(tmp_path) -> dict:
  return json.load(open(tmp_path / "stages.json"))


def test_a_done_stage_is_skipped_and_returns_its_saved_result(tmp_path):
  calls = []
  s = Stages(str(tmp_path))
  assert s.run("a", lambda: calls.append(1) or {"x": 1}) == {"x": 1}
  again = Stages(str(tmp_path))
  assert again.run("a", lambda: calls.append(2) or {"x": 2}) == {"x": 1}
  assert calls == [1] and again.skipped == ["a"]
  assert [t["stage"] for t in again.timings()] == ["a"]
  row = _record(tmp_path)["a"]
  assert row["status"] == "done" and row["result"] == {"x": 1} and row["sessions"] == 1


def test_a_failed_stage_is_recorded_and_runs_again_on_resume(tmp_path):
  s = Stages(str(tmp_path))

  def boom():
    raise RuntimeError("disk full\nmore detail")
  with pytest.raises(RuntimeError):
    s.run("b", boom)
  row = _record(tmp_path)["b"]
  assert row["status"] == "failed" and row["error"] == "RuntimeError: disk full"
  again = Stages(str(tmp_path))
  assert not again.done("b")
  assert again.run("b", lambda: 7) == 7 and again.skipped == []
  row = _record(tmp_path)["b"]
  assert row["status"] == "done" and row["sessions"] == 2 and "error" not in row


def test_an_interrupted_stage_stays_running_and_runs_again(tmp_path):
  """A killed session leaves the record it wrote when the stage started."""
  seen = []
  s = Stages(str(tmp_path))
  s.run("c", lambda: seen.append(_record(tmp_path)["c"]["status"]) or 1)
  assert seen == ["running"]
  row = _record(tmp_path)
  row["c"]["status"] = "running"            # as a session killed inside the stage leaves it
  (tmp_path / "stages.json").write_text(json.dumps(row))
  again = Stages(str(tmp_path))
  assert again.run("c", lambda: 2) == 2 and again.skipped == []


def test_a_rerun_stage_runs_every_session_and_keeps_no_result(tmp_path):
  calls = []
  for n in range(2):
    s = Stages(str(tmp_path))
    assert s.run("d", lambda n=n: calls.append(n) or f"path{n}", rerun=True) == f"path{n}"
  row = _record(tmp_path)["d"]
  assert calls == [0, 1] and row["status"] == "done" and row["rerun"] is True
  assert "result" not in row and row["sessions"] == 2


def test_timings_sum_over_sessions_in_first_run_order(tmp_path, monkeypatch):
  clock = iter([0.0, 2.0, 10.0, 13.0, 20.0, 24.0])   # perf_counter at each stage's start / end
  cpu = iter([0.0, 1.0, 5.0, 6.5, 8.0, 8.5])
  monkeypatch.setattr(stages_lib.time, "perf_counter", lambda: next(clock))
  monkeypatch.setattr(stages_lib, "cpu_s", lambda: next(cpu))
  s = Stages(str(tmp_path))
  s.run("data", lambda: None, rerun=True)
  s.run("train", lambda: None)
  Stages(str(tmp_path)).run("data", lambda: None, rerun=True)   # a second session
  assert Stages(str(tmp_path)).timings() == [{"stage": "data", "wall_s": 6.0, "cpu_s": 1.5},
                                             {"stage": "train", "wall_s": 3.0, "cpu_s": 1.5}]


def test_cpu_seconds_count_this_process():
  start = stages_lib.cpu_s()
  sum(i * i for i in range(200_000))
  assert stages_lib.cpu_s() > start
