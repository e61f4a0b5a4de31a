"""Evaluation instance sets: counts and budgets from the paper, disjoint, deterministic, solvable."""
import numpy as np
import pytest

from envs import splits
from envs.sokoban import solver


def test_budgets_match_paper_table_4():
  assert (splits.BUDGETS["sokoban"].source, splits.BUDGETS["sokoban"].evaluation) == (100, 200)
  assert splits.BUDGETS["sokoban"].actions == splits.BUDGETS["sokoban"].calls == 60
  assert splits.BUDGETS["crafter"].actions == splits.BUDGETS["crafter"].calls == 160


def test_sokoban_instances_disjoint_deterministic_and_within_budget():
  src, ev = splits.sokoban_instances("source"), splits.sokoban_instances("evaluation")
  assert src.levels.shape[0] == 100 and ev.levels.shape[0] == 200 and len(set(ev.ids)) == 200
  assert not {l.tobytes() for l in src.levels} & {l.tobytes() for l in ev.levels}
  assert len({l.tobytes() for l in ev.levels}) == 200
  assert (ev.optimal_moves <= ev.budget.actions).all() and (ev.optimal_moves >= 6).all()
  again = splits.sokoban_instances.__wrapped__("evaluation")
  np.testing.assert_array_equal(again.levels, ev.levels)
  for i in (0, 57, 199):  # spot-check the stored optimum with a fresh solve
    assert solver.solve(ev.levels[i]).length == ev.optimal_moves[i]


def test_crafter_and_procgen_sets():
  assert len(splits.crafter_seeds("source")) == 100 and len(splits.crafter_seeds("evaluation")) == 200
  assert not set(splits.crafter_seeds("source")) & set(splits.crafter_seeds("evaluation"))
  ev = splits.procgen_levels("evaluation")
  assert len(ev) == 120 and {lvl for _, lvl in ev} == set(range(100, 120))
  src = splits.procgen_levels("source")
  assert all(0 <= lvl < 50 for _, lvl in src) and len(src) == 86
  assert splits.procgen_normalized_return("chaser", 13.0) == pytest.approx(1.0)
  assert splits.procgen_normalized_return("bigfish", 1.0) == pytest.approx(0.0)
  with pytest.raises(ValueError, match="split"):
    splits.crafter_seeds("train")
