"""Decision-point probes of the audit (appendix C.1), the model-free part.

The model supplies numbers (sampled final actions, or summed token log-probabilities of each
admissible candidate with <action> prefilled); these functions turn them into the audit's figures:

  sampled_distribution(actions)        empirical final-action distribution of CoT samples; replies
                                       without a parsed action (None) form ONE failure category
  scored_distribution(logprobs)        softmax over the candidates' summed log-probabilities
  overlap(p, q) = sum_a min(p(a), q(a)) over the union of actions (0 disjoint .. 1 identical)
  preference(logp_true, logp_mismatch) prediction preference in nats (true minus mismatched)
"""
from collections import Counter
from typing import Mapping, Sequence

import numpy as np

FAILURE = "<no parsed action>"


def sampled_distribution(actions: Sequence[str | None]) -> dict[str, float]:
  if not actions:
    raise ValueError("no sampled actions")
  counts = Counter(FAILURE if a is None else a for a in actions)
  return {a: c / len(actions) for a, c in counts.items()}


def scored_distribution(logprobs: Mapping[str, float]) -> dict[str, float]:
  if not logprobs:
    raise ValueError("no candidate actions")
  names = list(logprobs)
  x = np.array([logprobs[a] for a in names], dtype=np.float64)
  p = np.exp(x - x.max())
  p /= p.sum()
  return dict(zip(names, p.tolist()))


def overlap(p: Mapping[str, float], q: Mapping[str, float]) -> float:
  return float(sum(min(p.get(a, 0.0), q.get(a, 0.0)) for a in set(p) | set(q)))


def preference(logp_true: Sequence[float], logp_mismatch: Sequence[float]) -> np.ndarray:
  """Per decision point: log p(true next observation) - log p(mismatched next observation)."""
  a, b = np.asarray(logp_true, np.float64), np.asarray(logp_mismatch, np.float64)
  if a.shape != b.shape:
    raise ValueError(f"shapes differ: {a.shape} vs {b.shape}")
  return a - b
