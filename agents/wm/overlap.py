"""Action-distribution overlap between every pair of conditions (the audit's Figure 3b/c, C.1).

  Overlap(p, q) = sum_a min(p(a), q(a))      (agents/wm/probes.overlap; 0 disjoint .. 1 identical)

Two sources of distributions at shared decision points:

  sampled (with CoT)  from evaluation episodes: a decision point is an exact agent prompt (the
                      user message of a model call: same task, history window, observation and
                      action list) that two conditions both met; a condition's distribution there
                      is the empirical distribution of the actions it sent after each such call
                      (replies without a parsed action form ONE failure category, as in the
                      audit). With several replies per point needed, these are mostly the first
                      steps of each task and points the policies reach by the same route.
  direct (no CoT)     from `agents.wm.probes_model.direct_distributions` at fixed decision points:
                      softmax over the admissible candidates' summed log-probabilities.

Seeds: a pair (A, B) is compared seed by seed (seed s of A against seed s of B); a condition run
with one seed only (e.g. an untrained BASE) is compared against every seed of the other. A point's
overlap is the mean over the seed pairs at which both conditions have >= `min_samples` replies; the
pair's figure is the mean over those points with a bootstrap 95% interval resampling the points
(2,000 draws, as the audit). Pairs are labelled "BASE–trained" or "trained–trained"; the group
rows give each group's mean over its pairs and the difference (the audit's Δ).
"""
import itertools
from collections import defaultdict
from typing import Mapping, Sequence

import numpy as np

from agents.wm import probes
from agents.wm.paired import seed_pairs
from agents.wm.trajectory import PARSE_FAILURE_TAG
from lib.report import stats

Point = tuple[str, str, str]          # (env, regime, prompt)


def sampled_actions(rows: Sequence[Mapping]) -> dict[Point, list[str | None]]:
  """Decision point -> the actions sent after each call with that exact prompt (None: unparsed)."""
  out: dict[Point, list[str | None]] = defaultdict(list)
  for row in rows:
    pending = None
    for e in row.get("transcript", ()):
      if e.get("type") == "call":
        users = [m.get("content", "") for m in e.get("messages") or () if m.get("role") == "user"]
        pending = users[-1] if users and e.get("error") is None else None
      elif e.get("type") == "action":
        if pending is not None:
          action = None if e.get("tag") == PARSE_FAILURE_TAG else e.get("action")
          out[(str(row.get("env", "")), str(row.get("regime", "")), pending)].append(action)
        pending = None
  return dict(out)


def group_of(a: str, b: str, reference: str = "BASE") -> str:
  return "BASE–trained" if reference in (a, b) else "trained–trained"


def pairwise(dists: Mapping[str, Mapping[object, Mapping[object, Mapping[str, float]]]],
             kind: str, n_resamples: int = 2000, seed: int = 0,
             reference: str = "BASE") -> list[dict]:
  """Mean overlap for every pair of conditions over their shared points.

  Args:
    dists: condition -> seed -> point -> action distribution.
    kind: "sampled" or "direct", copied into the rows.
    n_resamples, seed: the point bootstrap.
    reference: the untrained condition that names the "BASE–trained" group.
  Returns:
    One row per pair {"kind", "a", "b", "group", "overlap", "lo", "hi", "points"}; overlap and
    its interval are None when the pair shares no point.
  """
  out = []
  for a, b in itertools.combinations(list(dists), 2):
    per_point: dict[object, list[float]] = defaultdict(list)
    for sa, sb in seed_pairs(list(dists[a]), list(dists[b])):
      pa, pb = dists[a].get(sa, {}), dists[b].get(sb, {})
      for point in set(pa) & set(pb):
        per_point[point].append(probes.overlap(pa[point], pb[point]))
    values = [float(np.mean(v)) for _, v in sorted(per_point.items(), key=lambda kv: str(kv[0]))]
    lo = hi = mean = None
    if values:
      mean = float(np.mean(values))
      lo, hi = stats.bootstrap_ci([[v] for v in values], n_resamples=n_resamples, seed=seed)
    out.append({"kind": kind, "a": a, "b": b, "group": group_of(a, b, reference),
                "overlap": mean, "lo": lo, "hi": hi, "points": len(values)})
  return out


def sampled_distributions(rows_by_condition_seed: Mapping[tuple[str, object], Sequence[Mapping]],
                          min_samples: int = 4) -> dict:
  """condition -> seed -> point -> empirical action distribution, for points with at least
  `min_samples` replies of that (condition, seed)."""
  out: dict = defaultdict(dict)
  for (cond, seed), rows in rows_by_condition_seed.items():
    acts = sampled_actions(rows)
    out[cond][seed] = {p: probes.sampled_distribution(a) for p, a in acts.items()
                       if len(a) >= min_samples}
  return dict(out)


def direct_as_dists(direct: Mapping[str, Sequence[Mapping[str, float]]]) -> dict:
  """`probes_model.direct_distributions` output (condition -> [dist per point]) in `pairwise`'s
  layout (one seed, points by index)."""
  return {c: {0: dict(enumerate(ds))} for c, ds in direct.items()}


def group_rows(pairs: Sequence[Mapping]) -> list[dict]:
  """Per kind: the mean overlap of the BASE–trained and trained–trained pairs and their
  difference (trained–trained minus BASE–trained); None where a group has no measured pair."""
  out = []
  for kind in sorted({p["kind"] for p in pairs}):
    means = {}
    for g in ("BASE–trained", "trained–trained"):
      vals = [p["overlap"] for p in pairs if p["kind"] == kind and p["group"] == g
              and p["overlap"] is not None]
      means[g] = float(np.mean(vals)) if vals else None
    a, b = means["BASE–trained"], means["trained–trained"]
    out.append({"kind": kind, "BASE–trained": a, "trained–trained": b,
                "delta": None if a is None or b is None else b - a})
  return out
