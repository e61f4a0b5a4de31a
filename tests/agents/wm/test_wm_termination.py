"""Termination types of evaluation episodes from hand-built host-loop rows."""
import pytest

from agents.wm import termination

R = "<think>t</think><action>x</action>"


def test_each_type_from_its_row(make_row):
  plain = [(R, "go north", "A"), (R, "go south", "B")]
  assert termination.termination_type(make_row("X", plain, "success")) == "success"
  assert termination.termination_type(make_row("X", plain, "failure")) == "env ended, unsolved"
  assert termination.termination_type(make_row("X", plain, "action_budget")) == "step limit"
  assert termination.termination_type(make_row("X", plain, "truncated")) == "step limit"
  assert termination.termination_type(make_row("X", plain, "call_budget")) == "step limit"
  assert termination.termination_type(make_row("X", plain, "backend_error")) == "backend error"
  assert termination.termination_type(make_row("X", plain, "agent_error")) == "agent error"
  # an env error wins over the status the host loop gave (the env terminated the episode)
  died = make_row("X", plain, "failure", last_info={"env_error": "env_died"})
  assert termination.termination_type(died) == "env error"
  # so does a worker process that hung or died under the env (host.executor processes / ray)
  assert termination.termination_type(make_row("X", plain, "env_error")) == "env error"


def test_step_limit_split_into_looping_and_invalid_format(make_row):
  # o0 = "A"; (A, wait) -> A, (A, wait) -> A: the second step repeats the first cycle
  loop = make_row("X", [(R, "wait", "A"), (R, "wait", "A")], "action_budget", reset_obs="A")
  assert termination.termination_type(loop) == "step limit: looping"
  # a cycle that was left before the limit is not "looping" at the end
  left = make_row("X", [(R, "wait", "A"), (R, "wait", "A"), (R, "go", "B")], "action_budget",
                  reset_obs="A")
  assert termination.termination_type(left) == "step limit"
  bad = [(R, "go", "B"), ("no tags", None, "C"), ("no tags", None, "D"), ("no tags", None, "E")]
  assert termination.termination_type(make_row("X", bad, "action_budget")) == \
      "step limit: invalid format"
  # two trailing parse failures are not a run of three
  assert termination.termination_type(make_row("X", bad[:3], "action_budget")) == "step limit"
  assert termination.termination_type(make_row("X", bad[:3], "action_budget"),
                                      parse_run=2) == "step limit: invalid format"


def test_unknown_status_is_one_clear_error(make_row):
  with pytest.raises(ValueError, match="unknown status 'exploded'"):
    termination.termination_type(make_row("X", [(R, "go", "B")], "exploded"))


def test_breakdown_percentages_and_null_without_episodes(make_row):
  rows = [make_row("A", [(R, "go", "B")], s) for s in ("success", "success", "failure",
                                                         "action_budget")]
  out = termination.breakdown({"A": rows, "EMPTY": []})
  a = {r["termination"]: r for r in out if r["condition"] == "A"}
  assert [r["termination"] for r in out if r["condition"] == "A"] == list(termination.TYPES)
  assert a["success"]["episodes"] == 2 and a["success"]["percent"] == 50.0
  assert a["env ended, unsolved"]["percent"] == 25.0 and a["step limit"]["percent"] == 25.0
  assert a["env error"]["episodes"] == 0 and a["env error"]["percent"] == 0.0
  assert sum(r["percent"] for r in a.values()) == pytest.approx(100.0)
  empty = [r for r in out if r["condition"] == "EMPTY"]
  assert all(r["percent"] is None and r["n"] == 0 for r in empty)


def test_plot_breakdown_written(make_row, tmp_path):
  rows = termination.breakdown({"A": [make_row("A", [(R, "go", "B")], "success")],
                                "B": [make_row("B", [(R, "go", "B")], "failure")] * 3})
  path = termination.plot_breakdown(rows, str(tmp_path / "t.png"), title="synthetic")
  assert (tmp_path / "t.png").stat().st_size > 10_000 and path.endswith("t.png")
