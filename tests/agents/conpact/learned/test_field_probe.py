"""agents/conpact/learned/field_probe.py: per-field shares against the demonstrated belief and the
truth, on real demonstration rows, with a backend whose replies the test controls."""
from agents.conpact import demonstrations
from agents.conpact.learned import field_probe
from lib.backends.protocol import Backend, Completion


class Replay(Backend):
  """Answers each prompt with a fixed reply (keyed by the prompt's last message)."""
  name = "replay"

  def __init__(self, replies: dict):
    super().__init__()
    self.replies = replies

  def _generate(self, convs, params):
    return [Completion(text=self.replies[c[-1]["content"]]) for c in convs]


def test_shares_follow_the_replies_against_belief_and_truth():
  rows = demonstrations.planner_rows("sokoban", [0, 1, 2], noise=0.6, seed=3)
  picked = field_probe.initial_rows(rows, per_env=8, seed=0)
  assert picked and all("discussion" not in r["meta"] for r in picked)
  noisy = sum(r["meta"]["belief"]["player"] != r["meta"]["truth"]["player"] for r in picked)
  assert 0 < noisy < len(picked)     # the misperceiving demonstrator differs from the truth
  # echo every row's own target on even rows, no state block on odd rows
  replies = {r["messages"][-1]["content"]: (r["target"] if i % 2 == 0 else "<subgoal>up</subgoal>")
             for i, r in enumerate(picked)}
  table = field_probe.probe(picked, Replay(replies))
  player = next(t for t in table if t["field"] == "player")
  even = picked[::2]
  assert player["rows"] == len(picked)
  assert player["stated"] == player["as_demonstrated"] == len(even) / len(picked)
  right = sum(r["meta"]["belief"]["player"] == r["meta"]["truth"]["player"] for r in even)
  assert player["correct"] == right / len(picked)
  assert player["correct_of_stated"] == right / len(even)
  assert [t["field"] for t in table] == ["player", "boxes", "boxes_on_targets", "blocked_moves"]


def test_nothing_stated_is_null_correctness_not_zero():
  rows = field_probe.initial_rows(demonstrations.planner_rows("sokoban", [0], 0.0, 1), 2, 0)
  table = field_probe.probe(rows, Replay({r["messages"][-1]["content"]: "" for r in rows}))
  assert all(t["stated"] == 0 and t["correct_of_stated"] is None for t in table)
