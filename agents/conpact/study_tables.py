"""Analogues of the paper's Tables 20-22 for trained ConPAct models, with paired tests.

Inputs: `rows_by_model`, trained model name -> conpact/eval results rows of ONE env and ONE
evaluated condition (e.g. every trained planner/actor pair run with ConPAct-I), k rollouts per
instance; one name is the token-matched baseline. Every metric comes from
`agents.conpact.metrics` / `attribution` (nothing is recomputed here); a model without rows, or a
metric without inputs, is None (null in JSON, "n/a" for D and "–" elsewhere in markdown), never 0.

    tables = study_tables.study_tables(rows_by_model, k=8, baseline="baseline",
                                       curate_of={"full": {...}, ...}, n_resamples=2000, seed=0)
    rows20, md20 = tables["table20"]     # also "table21", "table22", "tests"
    (optional: extra_pairs=[("conpact_r", "conpact_s")] adds those comparisons to "tests")

  table20  Table 20 layout (data ablations; Baseline / No Sup. / No Replay / Full, and ConPAct-S
           vs ConPAct-R): avg@k, pass@k, pass^k, success, initial D, residual D, and the paired
           test of each model's success against the baseline
  table21  Table 21: initial D, planner / actor correctness, and their changes from the baseline
           in percentage points
  table22  Table 22 (with Table 23's CC/CW): the model's training switches (Sup., Replay) when
           `curate_of` gives them, discussion rate, initial / residual D, CC / CW / D_field and
           their signed changes after discussion
  tests    the paired tests alone

Paired tests of success, model vs baseline, over the (instance, rollout) episodes both hold:
  diff_pp      mean success difference in percentage points; ci95_pp its paired bootstrap 95%
               interval resampling instances (`lib.report.stats.paired_bootstrap_ci`: rollouts of
               one instance stay together, so correlated rollouts are not independent evidence)
  p_mcnemar    two-sided exact McNemar on the discordant episode pairs (rollout j of the model
               against rollout j of the baseline on the same instance; the exact test treats the
               pairs as independent -- the bootstrap interval is the cluster-aware statement)
  p_holm       Holm-adjusted over every comparison in the call (against the baseline, and the
               `extra_pairs`, e.g. ConPAct-R against ConPAct-S)
Rates in JSON are fractions in [0, 1] (as metrics.py writes them); *_pp fields are percentage
points; markdown shows percentages with one decimal.
"""
from typing import Mapping, Sequence

import numpy as np

from agents.conpact import attribution, metrics
from lib.report import stats
from lib.run.results import markdown_table


def model_metrics(rows: Sequence[dict], k: int, n_resamples: int = 2000, seed: int = 0) -> dict:
  """One model's performance, mismatch and correctness (metrics.py) and CC/CW (attribution.py);
  {} when it has no rows, and the @k metrics None when an instance has fewer than k rollouts."""
  rows = list(rows)
  if not rows:
    return {}
  try:
    perf = metrics.performance(rows, k)
  except ValueError:  # fewer than k rollouts somewhere: no @k metrics rather than wrong ones
    perf = {**metrics.performance(rows, 1), f"avg@{k}": None, f"pass@{k}": None,
            f"pass^{k}": None}
    for key in ("avg@1", "pass@1", "pass^1"):
      perf.pop(key)
  return {"episodes": len(rows), "instances": len({r["instance"] for r in rows}), **perf,
          **metrics.mismatch(rows), **metrics.correctness(rows),
          **attribution.consistency_correctness(rows),
          "success_ci": metrics.success_ci(rows, n_resamples, seed)}


def _episodes(rows: Sequence[dict]) -> dict[str, dict[int, float]]:
  out: dict = {}
  for r in rows:
    out.setdefault(r["instance"], {})[int(r["rollout"])] = float(r["success"])
  return out


def paired_test(rows_a: Sequence[dict], rows_b: Sequence[dict], n_resamples: int = 2000,
                seed: int = 0) -> dict:
  """Success of a minus b over the shared (instance, rollout) episodes; see module doc. Fields are
  None when no episode is shared."""
  a, b = _episodes(rows_a), _episodes(rows_b)
  xa, xb = [], []
  for inst in sorted(set(a) & set(b)):
    shared = sorted(set(a[inst]) & set(b[inst]))
    if shared:
      xa.append(np.array([a[inst][j] for j in shared]))
      xb.append(np.array([b[inst][j] for j in shared]))
  out = {"pairs": int(sum(x.size for x in xa)), "instances_paired": len(xa), "diff_pp": None,
         "ci95_pp": None, "only_model": None, "only_against": None, "p_mcnemar": None}
  if not xa:
    return out
  fa, fb = np.concatenate(xa) > 0, np.concatenate(xb) > 0
  lo, hi = stats.paired_bootstrap_ci(xa, xb, n_resamples=n_resamples, seed=seed)
  only_a, only_b = int(np.sum(fa & ~fb)), int(np.sum(~fa & fb))
  out.update(diff_pp=100.0 * float(np.mean(fa.astype(float) - fb)),
             ci95_pp=[100.0 * lo, 100.0 * hi], only_model=only_a, only_against=only_b,
             p_mcnemar=stats.mcnemar_exact(only_a, only_b))
  return out


def paired_tests(rows_by_model: Mapping[str, Sequence[dict]], baseline: str,
                 extra_pairs: Sequence[tuple[str, str]] = (), n_resamples: int = 2000,
                 seed: int = 0) -> list[dict]:
  """One row per comparison: every model against `baseline` (when it has rows), then
  `extra_pairs` (a, b) (e.g. ConPAct-R against ConPAct-S); `paired_test` fields plus p_holm over
  every comparison that had a shared episode."""
  pairs = [(m, baseline) for m in rows_by_model if m != baseline] \
      if rows_by_model.get(baseline) else []
  pairs += [p for p in extra_pairs if p not in pairs]
  out = [{"model": a, "against": b,
          **paired_test(rows_by_model.get(a, ()), rows_by_model.get(b, ()), n_resamples, seed)}
         for a, b in pairs]
  tested = [t for t in out if t["p_mcnemar"] is not None]
  adjusted = stats.holm([t["p_mcnemar"] for t in tested]) if tested else []
  for t in out:
    t["p_holm"] = None
  for t, p in zip(tested, adjusted):
    t["p_holm"] = float(p)
  return out


def _get(m: dict, key: str):
  return m.get(key) if m else None


def _delta_pp(a, b):
  return None if a is None or b is None else 100.0 * (a - b)


def _test_cols(tests: Sequence[dict], model: str, baseline: str) -> dict:
  t = next((t for t in tests if t["model"] == model and t["against"] == baseline), {})
  return {"diff_pp": t.get("diff_pp"), "ci95_pp": t.get("ci95_pp"),
          "p_mcnemar": t.get("p_mcnemar"), "p_holm": t.get("p_holm")}


def _fmt(col: str, v) -> str:
  """A markdown cell: rates as percentages, *_pp as signed points, p-values to 3 digits."""
  if v is None:
    return "n/a" if "D" in col.split("_") else "–"  # D without a comparable check
  if isinstance(v, bool):
    return "✓" if v else "✗"
  if isinstance(v, list):  # a CI
    return f"[{v[0]:+.1f}, {v[1]:+.1f}]"
  if col.startswith("p_"):
    return f"{v:.3g}"
  if col.endswith("_pp") or col.endswith("_delta"):
    return f"{v:+.1f}"
  if isinstance(v, float):
    return f"{100.0 * v:.1f}"
  return str(v)


def _markdown(rows: list[dict], title: str, note: str, key=("model",)) -> str:
  cells = [{c: _fmt(c, v) for c, v in r.items()} for r in rows]
  return f"### {title}\n\n{note}\n\n" + markdown_table(cells, key=list(key))


def table20(metrics_by_model: Mapping[str, dict], tests: Sequence[dict], k: int, baseline: str
            ) -> tuple[list[dict], str]:
  rows = []
  for model, m in metrics_by_model.items():
    rows.append({"model": model, "episodes": _get(m, "episodes"),
                 f"avg@{k}": _get(m, f"avg@{k}"), f"pass@{k}": _get(m, f"pass@{k}"),
                 f"pass^{k}": _get(m, f"pass^{k}"), "success": _get(m, "success"),
                 "initial_D": _get(m, "initial_D"), "residual_D": _get(m, "residual_D"),
                 **_test_cols(tests, model, baseline)})
  return rows, _markdown(rows, "Training-data ablations (paper Table 20 layout)",
                         "Rates in %; diff_pp = success minus the baseline's (points) with its "
                         "paired instance-bootstrap 95% CI; p: exact McNemar, Holm-adjusted.")


def table21(metrics_by_model: Mapping[str, dict], baseline: str) -> tuple[list[dict], str]:
  base = metrics_by_model.get(baseline) or {}
  rows = []
  for model, m in metrics_by_model.items():
    row = {"model": model}
    for key in ("initial_D", "planner_correct", "actor_correct"):
      row[key] = _get(m, key)
      row[f"{key}_delta_pp"] = None if model == baseline else _delta_pp(_get(m, key),
                                                                        base.get(key))
    rows.append(row)
  return rows, _markdown(rows, "Initial mismatch and assertion correctness (paper Table 21 layout)",
                         f"Rates in %; *_delta_pp = model minus {baseline} (percentage points).")


def table22(metrics_by_model: Mapping[str, dict], tests: Sequence[dict], baseline: str,
            curate_of: Mapping[str, dict | None] | None = None) -> tuple[list[dict], str]:
  rows = []
  for model, m in metrics_by_model.items():
    cur = (curate_of or {}).get(model)
    row = {"model": model,
           "sup": None if cur is None else bool(cur["reconciliation_supervision"]),
           "replay": None if cur is None else bool(cur["reconciliation_replay"]),
           "discussion_rate": _get(m, "discussion_rate"), "initial_D": _get(m, "initial_D"),
           "residual_D": _get(m, "residual_D")}
    for key in ("CC", "CW", "D_field"):
      row[key] = _get(m, key)
      d = _get(m, f"{key}_delta")
      row[f"{key}_delta_pp"] = None if d is None else 100.0 * d
    rows.append({**row, **_test_cols(tests, model, baseline)})
  return rows, _markdown(rows, "Discussion and state mismatch (paper Tables 22-23 layout)",
                         "Rates in %; sup/replay: the model's training data (– = not a ConPAct "
                         "recipe); CC/CW/D_field over fields both roles stated, *_delta_pp = "
                         "after discussion minus initial (points).")


def study_tables(rows_by_model: Mapping[str, Sequence[dict]], k: int, baseline: str = "baseline",
                 curate_of: Mapping[str, dict | None] | None = None,
                 extra_pairs: Sequence[tuple[str, str]] = (), n_resamples: int = 2000,
                 seed: int = 0) -> dict[str, tuple[list[dict], str]]:
  """Tables 20-22 and the paired tests; see the module doc.

  Args:
    rows_by_model: model name -> results rows (one env, one evaluated condition), in the order
      the tables list them; the baseline's name is `baseline`.
    k: rollouts per instance (avg@k, pass@k, pass^k).
    baseline: the token-matched baseline's name (missing: tests and deltas are None).
    curate_of: model name -> its data_stats.json "curate" block (Sup./Replay columns), optional.
    extra_pairs: further (a, b) comparisons for the tests table and the Holm family, e.g.
      [("conpact_r", "conpact_s")].
    n_resamples, seed: bootstrap settings.
  Returns:
    {"table20" | "table21" | "table22" | "tests": (json rows, markdown)}; strict-JSON-safe.
  """
  by_model = {m: model_metrics(rows, k, n_resamples, seed) for m, rows in rows_by_model.items()}
  tests = paired_tests(rows_by_model, baseline, extra_pairs, n_resamples, seed)
  return {"table20": table20(by_model, tests, k, baseline), "table21": table21(by_model, baseline),
          "table22": table22(by_model, tests, baseline, curate_of),
          "tests": (tests, _markdown(tests, "Paired tests of success",
                                     "model minus `against`: diff_pp and its paired instance-"
                                     "bootstrap 95% CI in points; p: exact McNemar, Holm-adjusted "
                                     "over every row.", key=("model", "against")))}
