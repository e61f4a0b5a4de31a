"""Action-distribution overlap and prediction preference on hand-computed cases."""
import numpy as np
import pytest
from scipy.special import softmax

from agents.wm import probes


def test_sampled_distribution_counts_failures_as_one_category():
  d = probes.sampled_distribution(["open safe 1", None, "open safe 1", None])
  assert d == {"open safe 1": 0.5, probes.FAILURE: 0.5}


def test_scored_distribution_matches_scipy_softmax():
  lp = {"a": -1.0, "b": -2.5, "c": -0.3}
  d = probes.scored_distribution(lp)
  np.testing.assert_allclose([d[k] for k in lp], softmax(list(lp.values())))


def test_overlap_known_values():
  p = {"a": 0.5, "b": 0.5}
  assert probes.overlap(p, p) == pytest.approx(1.0)
  assert probes.overlap(p, {"c": 1.0}) == 0.0
  # min(0.5, 0.2) + min(0.5, 0) + min(0, 0.8) = 0.2
  assert probes.overlap(p, {"a": 0.2, "c": 0.8}) == pytest.approx(0.2)
  assert probes.overlap(p, {"a": 0.2, "c": 0.8}) == probes.overlap({"a": 0.2, "c": 0.8}, p)


def test_preference():
  np.testing.assert_allclose(probes.preference([-3.0, -10.0], [-5.0, -4.0]), [2.0, -6.0])
  with pytest.raises(ValueError):
    probes.preference([1.0], [1.0, 2.0])
