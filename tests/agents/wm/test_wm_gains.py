"""The content-vs-optimisation decomposition: exact values, additivity, nulls, the figure."""
import os

import numpy as np
import pytest
from PIL import Image

from agents.wm import gains

T = [f"t{i}" for i in range(8)]


def _cond(successes_per_task):
  return {t: (4, c) for t, c in zip(T, successes_per_task)}


def _counts(with_coin=True):
  one = {"BASE": _cond([0, 0, 0, 0, 0, 0, 1, 0]),
         "GRPO-GT": _cond([4, 4, 4, 2, 2, 0, 1, 0]),
         "GRPO-MIS": _cond([4, 2, 2, 1, 0, 0, 1, 0]),
         "GT-PERM": _cond([2, 1, 1, 1, 0, 0, 0, 0]),
         "OPSD-GT": _cond([1, 0, 0, 0, 0, 0, 1, 0])}
  if with_coin:
    one["GRPO-COIN"] = _cond([1, 1, 1, 1, 1, 1, 1, 1])
  return {0: one}


def _p1(name, c):
  return 100 * np.mean([c[0][name][t][1] / 4 for t in T])


def test_decomposition_values_and_additivity():
  c = _counts()
  rows = gains.decompose(c, [1, 4], n_resamples=1000)
  get = {(r["family"], r["k"], r["effect"]): r for r in rows}
  assert get[("GRPO", 1, "total")]["diff"] == pytest.approx(_p1("GRPO-GT", c) - _p1("BASE", c))
  assert get[("GRPO", 1, "training")]["diff"] == pytest.approx(_p1("GRPO-MIS", c)
                                                               - _p1("BASE", c))
  assert get[("GRPO", 1, "knowledge")]["diff"] == pytest.approx(_p1("GRPO-GT", c)
                                                                - _p1("GRPO-MIS", c))
  assert get[("GRPO", 1, "zero-info")]["diff"] == pytest.approx(_p1("GRPO-COIN", c)
                                                                - _p1("BASE", c))
  assert get[("GRPO", 1, "pairing")]["diff"] == pytest.approx(_p1("GRPO-GT", c)
                                                              - _p1("GT-PERM", c))
  for k in (1, 4):
    t, tr, kn = (get[("GRPO", k, e)]["diff"] for e in ("total", "training", "knowledge"))
    assert t == pytest.approx(tr + kn)
  # pass@4 with 4 attempts = solved at least once: GT 6/8, MIS 5/8, BASE 1/8, COIN 8/8
  assert get[("GRPO", 4, "total")]["diff"] == pytest.approx(100 * 5 / 8)
  assert get[("GRPO", 4, "knowledge")]["diff"] == pytest.approx(100 * 1 / 8)
  assert get[("GRPO", 4, "zero-info")]["diff"] == pytest.approx(100 * 7 / 8)
  assert get[("GRPO", 4, "total")]["metric"] == "coverage"
  assert get[("GRPO", 1, "total")]["metric"] == "selection"
  # total's interval excludes 0 here, so the knowledge share is reported
  tot = get[("GRPO", 4, "total")]
  assert tot["lo"] > 0
  assert get[("GRPO", 4, "knowledge share")]["diff"] == pytest.approx(1 / 5)


def test_missing_conditions_and_noisy_totals_are_null():
  rows = gains.decompose(_counts(with_coin=False), [1], n_resamples=1000)
  get = {(r["family"], r["k"], r["effect"]): r for r in rows}
  assert get[("GRPO", 1, "zero-info")]["diff"] is None           # no GRPO-COIN: null, not 0
  assert get[("OPSD", 1, "training")]["diff"] is None            # no OPSD-MIS
  assert get[("OPSD", 1, "knowledge")]["diff"] is None
  assert get[("OPSD", 1, "knowledge share")]["diff"] is None
  # OPSD-GT - BASE is 1 task of 8 at 1/4: its interval contains 0
  assert get[("OPSD", 1, "total")]["lo"] <= 0 <= get[("OPSD", 1, "total")]["hi"]


def test_plot_is_written(tmp_path):
  rows = gains.decompose(_counts(), [1, 4], n_resamples=200)
  path = gains.plot_decomposition(rows, os.path.join(tmp_path, "g.png"), title="synthetic")
  w, h = Image.open(path).size
  assert w > 1000 and h > 300
