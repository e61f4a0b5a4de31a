"""Resumable study stages (agents/conpact/learned/stages.py)."""
import json

from agents.conpact.learned.stages import Stages


def test_a_done_stage_is_skipped_and_returns_its_saved_result(tmp_path):
  calls = []
  s = Stages(str(tmp_path))
  assert s.run("a", lambda: calls.append(1) or {"x": 1}) == {"x": 1}
  again = Stages(str(tmp_path))
  assert again.run("a", lambda: calls.append(2) or {"x": 2}) == {"x": 1}
  assert calls == [1] and again.skipped == ["a"]
  assert [t["stage"] for t in again.timings()] == ["a"]
  assert json.load(open(tmp_path / "stages.json"))["a"]["done"] is True


def test_a_failed_stage_is_not_marked_done(tmp_path):
  s = Stages(str(tmp_path))

  def boom():
    raise RuntimeError("x")
  try:
    s.run("b", boom)
  except RuntimeError:
    pass
  assert not Stages(str(tmp_path)).done("b")
