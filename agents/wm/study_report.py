"""The study's analyses over evaluation episode rows: one entry point, `study_report`.

  json_rows, sections, pngs = study_report(rows_by_condition_seed, outdir=workdir)

`rows_by_condition_seed[(condition, seed)]` holds the episode rows `experiments/wm/eval.py` writes
to results.jsonl (host-loop rows: condition, env, regime, level, sample, status, success,
transcript). Per (env, regime) found in the rows it computes:

  paired      McNemar exact + Holm on tasks solved at pass@n, and paired task-bootstrap pass@k
              differences, for every condition against BASE and GT against each control
              (agents/wm/paired.py)
  gains       the content-vs-optimisation (knowledge vs coverage) decomposition (agents/wm/gains.py)
  termination how episodes end (agents/wm/termination.py)
  traces      Table 3: tokens per step, entity reference, action revision, multiple candidates;
              the rule-based annotator always, the LLM-judge annotator too when `trace_judge` is
              given (agents/wm/traces.py); each row names its annotator
  overlap     action-distribution overlap for every pair of conditions from sampled actions at
              shared decision points, and from direct scoring when `direct_distributions`
              (`agents.wm.probes_model.direct_distributions`) is given (agents/wm/overlap.py)

Returns
  json_rows   strict-JSON-ready dicts, each with "table" (paired_mcnemar, paired_passk, gains,
              termination, traces, overlap, overlap_groups) and its env / regime
  sections    markdown sections ("### ..." heading, a note saying what the columns count, table)
  pngs        the figures written under `outdir`: gains_<env>_<regime>.png,
              termination_<env>_<regime>.png, traces_<env>_<regime>.png (_llm.png for the LLM
              judge), overlap_<env>_<regime>.png (and overlap_direct.png)

Task ids are "<env>/<level>", as in eval.py; pass@k counts every episode (an episode ended by an
env error counts as unsolved, as in eval.py's curves; the termination table shows how many).
"""
import dataclasses
import os
from collections import defaultdict
from typing import Mapping, Sequence

import numpy as np

from agents.wm import gains, overlap, paired, passk, termination, traces
from lib.report import plots
from lib.run.results import markdown_table, strict_json

NOTE_ANNOTATOR = ("Annotators: the rule-based annotator is an offline heuristic (keyword and "
                  "action-mention rules), not the paper's LLM annotation; 'LLM judge (...)' rows "
                  "come from the named backend.")


def _split(rows_by_condition_seed) -> dict:
  """(env, regime) -> seed -> condition -> rows."""
  out: dict = defaultdict(lambda: defaultdict(dict))
  for (cond, seed), rows in rows_by_condition_seed.items():
    for r in rows:
      out[(str(r["env"]), str(r["regime"]))][seed].setdefault(cond, []).append(r)
  return out


def _counts(by_seed) -> dict:
  return {seed: passk.counts_from_rows([{**r, "task_id": f"{r['env']}/{r['level']}"}
                                        for rows in conds.values() for r in rows])
          for seed, conds in by_seed.items()}


def _section(title: str, note: str, rows: Sequence[dict], key=None) -> str:
  return f"### {title}\n\n{note}\n\n{markdown_table(rows, key=key)}"


def _ks(counts, ks) -> list[int]:
  n_min = min((n for s in counts.values() for c in s.values() for n, _ in c.values()), default=0)
  return [k for k in ks if k <= n_min]


def study_report(rows_by_condition_seed: Mapping[tuple[str, object], Sequence[dict]], *,
                 outdir: str, ks: Sequence[int] = passk.DEFAULT_KS, reference: str = "BASE",
                 trace_judge=None, trace_samples: int = 300,
                 direct_distributions: Mapping[str, Sequence[Mapping[str, float]]] | None = None,
                 min_samples: int = 4, overlap_pool_seeds: bool = False,
                 n_resamples: int = 10_000, seed: int = 0,
                 scale_label: str = "CPU scale") -> tuple[list[dict], list[str], list[str]]:
  """All of the study's analyses (module docstring) over its episode rows.

  Args:
    rows_by_condition_seed: (condition, seed) -> episode rows of eval.py's results.jsonl
      (`final_rows`); a condition evaluated once may appear with a single seed.
    outdir: where the PNGs go (created if missing).
    ks: pass@k levels; those above the fewest attempts per task are dropped.
    reference: the untrained condition.
    trace_judge: an optional `traces.LLMTraceAnnotator` (the LLM-judge path), run in one batched
      call over every sampled step, beside the rule-based annotator.
    trace_samples: eligible steps sampled per (env, regime, condition) for trace annotation.
    direct_distributions: optional condition -> [action distribution per fixed decision point]
      from direct scoring (no CoT).
    min_samples: replies a (condition, seed) needs at a decision point for the sampled overlap.
    overlap_pool_seeds: the sampled overlap pools each condition's seeds (a condition-level
      distribution: for a study with few samples per seed, whose points would otherwise all
      fall below `min_samples`); seed s against seed s otherwise.
    n_resamples, seed: bootstraps (pass@k differences: n_resamples; overlaps: 2,000).
    scale_label: written into every figure title.
  Returns:
    (json_rows, markdown_sections, png_paths).
  """
  os.makedirs(outdir, exist_ok=True)
  out = _Out([], [], [])
  conds_all = list(dict.fromkeys(c for c, _ in rows_by_condition_seed))
  pending_llm = []            # (LLM json row, its steps, its sampled steps) for one batched call
  for (env, regime), by_seed in sorted(_split(rows_by_condition_seed).items()):
    tag = {"env": env, "regime": regime}
    title = f"{env} / {regime}"
    counts = _counts(by_seed)
    present = [c for c in conds_all if any(c in s for s in counts.values())]
    kk = _ks(counts, ks)
    _paired_part(out, tag, title, counts, present, kk, reference, n_resamples, seed)
    _gains_part(out, tag, title, counts, kk, reference, n_resamples, seed, outdir, scale_label)
    rows_by_cond = {c: [r for s in by_seed.values() for r in s.get(c, [])] for c in present}
    _termination_part(out, tag, title, rows_by_cond, outdir, scale_label)
    pending_llm += _traces_cells(out, tag, by_seed, present, trace_judge, trace_samples, seed)
    _overlap_part(out, tag, title, {"pooled": rows_by_cond} if overlap_pool_seeds else by_seed,
                  min_samples, reference, seed, outdir, scale_label, overlap_pool_seeds)
  _finish_traces(trace_judge, pending_llm)
  _traces_part(out, outdir, scale_label)
  if direct_distributions:
    _direct_overlap_part(out, direct_distributions, reference, seed, outdir, scale_label)
  return strict_json(out.rows), out.sections, out.pngs


@dataclasses.dataclass
class _Out:
  rows: list
  sections: list
  pngs: list


def _paired_part(out, tag, title, counts, present, kk, reference, n_resamples, seed) -> None:
  pairs = paired.comparisons(present, reference)
  mc = paired.mcnemar_rows(counts, pairs)
  diffs = paired.passk_differences(counts, pairs, kk, n_resamples, seed)
  out.rows.extend([{"table": "paired_mcnemar", **tag, **r} for r in mc]
                  + [{"table": "paired_passk", **tag, **r} for r in diffs])
  out.sections.append(_section(
      f"Paired coverage tests, {title}",
      "Tasks solved at least once in k attempts (pass@k, k = attempts per task); two-sided "
      "exact McNemar on the tasks only one side solved, Holm-adjusted over every row of this "
      "table; seed s against seed s (a single-seed condition against every seed). Cells list "
      "the seed pairs in order (a / b / ...); per-seed rows are in the JSON.",
      _mcnemar_wide(mc), key=["a", "b"]))
  shown = {kk[0], kk[-1]} if kk else set()
  out.sections.append(_section(
      f"Paired pass@k differences, {title}",
      "pass@k(a) − pass@k(b) in percentage points, mean over tasks (per task averaged over "
      "seed pairs), with a paired task-bootstrap 95% interval; all k are in the JSON rows.",
      [r for r in diffs if r["k"] in shown], key=["a", "b"]))


def _gains_part(out, tag, title, counts, kk, reference, n_resamples, seed, outdir,
                scale_label) -> None:
  if not kk:
    return
  dec = gains.decompose(counts, sorted({kk[0], kk[-1]}), n_resamples, seed, reference)
  out.rows.extend({"table": "gains", **tag, **r} for r in dec)
  out.sections.append(_section(
      f"Where the gains come from, {title}",
      "total = GT − BASE = training (MIS − BASE: optimisation without correct content) + "
      "knowledge (GT − MIS: what correct content adds); zero-info = COIN − BASE; pairing = "
      "GT − GT-PERM; percentage points of pass@1 (selection) and pass@k at the largest k "
      "(coverage), paired task-bootstrap 95% intervals; knowledge share = knowledge / total "
      "(a fraction; null when total's interval contains 0). Definitions: agents/wm/gains.py.",
      dec, key=["family", "k", "effect"]))
  if any(r["diff"] is not None for r in dec if r["effect"] in gains.EFFECTS):
    out.pngs.append(gains.plot_decomposition(
        dec, os.path.join(outdir, f"gains_{tag['env']}_{tag['regime']}.png"),
        title=f"{title}: where the gains come from ({scale_label})"))


def _termination_part(out, tag, title, rows_by_cond, outdir, scale_label) -> None:
  term = termination.breakdown(rows_by_cond)
  out.rows.extend({"table": "termination", **tag, **r} for r in term)
  out.sections.append(_section(
      f"Episode termination, {title}",
      "Percent of each condition's episodes (all seeds) by how they ended; n = episodes. "
      "'step limit: looping' = the last step repeats an observation–action cycle, 'step "
      "limit: invalid format' = the last 3 replies had no parsed action (agents/wm/"
      "termination.py).", _termination_wide(term)))
  if term:
    out.pngs.append(termination.plot_breakdown(
        term, os.path.join(outdir, f"termination_{tag['env']}_{tag['regime']}.png"),
        title=f"{title}: how episodes end ({scale_label})"))


def _traces_cells(out, tag, by_seed, present, trace_judge, trace_samples, seed) -> list:
  """Table 3 rows of one (env, regime): rule-based labels now; the LLM rows are returned to be
  filled by one batched call over every cell."""
  rule, pending = traces.RuleBasedTraceAnnotator(), []
  for c in present:
    steps = [st for s, conds in by_seed.items() for r in conds.get(c, [])
             for st in traces.steps_from_row(r, s)]
    sampled = traces.sample_steps(steps, trace_samples, seed)
    row = {"table": "traces", **tag, "condition": c,
           **traces.table3_row(steps, sampled, rule.annotate(sampled), rule.name)}
    out.rows.append(row)
    if trace_judge is not None:
      llm_row = {**row, "annotator": trace_judge.name}
      out.rows.append(llm_row)
      pending.append((llm_row, steps, sampled))
  return pending


_TRACE_COLS = ("env", "regime", "condition", "sampled", "judged", "tokens", "entity", "revision",
               "candidates", "annotator")


def _traces_part(out, outdir, scale_label) -> None:
  trace_rows = [r for r in out.rows if r["table"] == "traces"]
  out.sections.append(_section(
      "Reasoning traces (the audit's Table 3)",
      "tokens = mean reply tokens per step (all steps); entity = % of sampled eligible steps "
      "(parsed action, non-empty <think>) whose reasoning names an entity observed so far "
      "(rule-based matching, as the audit); revision / candidates = % of judged sampled steps "
      "with an action revision / >= 2 weighed candidates; all steps and eligible steps per cell "
      "are in the JSON. " + NOTE_ANNOTATOR,
      [{k: r[k] for k in _TRACE_COLS} for r in trace_rows], key=["env", "regime", "condition"]))
  for env, regime in sorted({(r["env"], r["regime"]) for r in trace_rows}):
    for name in dict.fromkeys(r["annotator"] for r in trace_rows):
      sel = [r for r in trace_rows if (r["env"], r["regime"], r["annotator"]) == (env, regime,
                                                                                  name)]
      if any(r["sampled"] for r in sel):
        suffix = "" if name == traces.RULE_BASED_ANNOTATOR_NAME else "_llm"
        out.pngs.append(_plot_traces(
            sel, os.path.join(outdir, f"traces_{env}_{regime}{suffix}.png"),
            f"{env} / {regime}: reasoning traces ({scale_label})\n{name}"))


def _overlap_part(out, tag, title, by_seed, min_samples, reference, seed, outdir,
                  scale_label, seeds_pooled=False) -> None:
  dists = overlap.sampled_distributions({(c, s): conds[c] for s, conds in by_seed.items()
                                         for c in conds}, min_samples)
  ov = overlap.pairwise(dists, "sampled", seed=seed, reference=reference)
  groups = overlap.group_rows(ov)
  out.rows.extend([{"table": "overlap", **tag, **r} for r in ov]
                  + [{"table": "overlap_groups", **tag, **r} for r in groups])
  out.sections.append(_section(
      f"Action-distribution overlap (sampled, with CoT), {title}",
      f"Σ_a min(p(a), q(a)) of the two conditions' sent-action distributions at shared "
      f"decision points (an identical agent prompt met with ≥ {min_samples} replies by each"
      f"{', seeds pooled' if seeds_pooled else ''}); "
      "mean over points with a point-bootstrap 95% interval (2,000 draws); group means and "
      "their difference Δ below.", ov, key=["a", "b"]) + "\n" + markdown_table(groups))
  if any(r["overlap"] is not None for r in ov):
    out.pngs.append(_plot_overlap(
        ov, os.path.join(outdir, f"overlap_{tag['env']}_{tag['regime']}.png"),
        f"{title}: final-action overlap with CoT ({scale_label})"))


def _direct_overlap_part(out, direct, reference, seed, outdir, scale_label) -> None:
  ov = overlap.pairwise(overlap.direct_as_dists(direct), "direct", seed=seed,
                        reference=reference)
  groups = overlap.group_rows(ov)
  out.rows.extend([{"table": "overlap", "env": None, "regime": "direct", **r} for r in ov]
                  + [{"table": "overlap_groups", "env": None, "regime": "direct", **r}
                     for r in groups])
  out.sections.append(_section(
      "Action-distribution overlap (direct scoring, no CoT)",
      "Softmax over the admissible candidates' summed log-probabilities at fixed decision "
      "points (agents/wm/probes_model.direct_distributions); mean over points with a "
      "point-bootstrap 95% interval.", ov, key=["a", "b"]) + "\n" + markdown_table(groups))
  if any(r["overlap"] is not None for r in ov):
    out.pngs.append(_plot_overlap(ov, os.path.join(outdir, "overlap_direct.png"),
                                  f"action overlap, direct scoring without CoT ({scale_label})"))


def _finish_traces(judge, pending) -> None:
  """One batched LLM call over every sampled step of every cell; fills the cells' labels."""
  if judge is None or not pending:
    return
  flat = [st for _, _, sampled in pending for st in sampled]
  labels = judge.annotate(flat)
  i = 0
  for row, steps, sampled in pending:
    mine, i = labels[i:i + len(sampled)], i + len(sampled)
    row.update(traces.table3_row(steps, sampled, mine, judge.name))


def _mcnemar_wide(rows: Sequence[dict]) -> list[dict]:
  """One line per comparison; each cell lists its seed pairs' values, "s0 / s1 / s2"."""
  out: dict = {}
  fmt = lambda v: "–" if v is None else (f"{v:.3g}" if isinstance(v, float) else str(v))
  for r in rows:
    line = out.setdefault((r["a"], r["b"]), {"a": r["a"], "b": r["b"], "tasks": r["tasks"],
                                              "k": r["k"], **{c: [] for c in _MC_COLS}})
    for c in _MC_COLS:
      line[c].append(fmt(r[c]))
  for line in out.values():
    for c in _MC_COLS:
      line[c] = " / ".join(line[c])
  return list(out.values())


_MC_COLS = ("solved_a", "solved_b", "only_a", "only_b", "p", "p_holm")


def _termination_wide(rows: Sequence[dict]) -> list[dict]:
  """One line per condition, one column per termination type (percent), n episodes."""
  out = {}
  for r in rows:
    line = out.setdefault(r["condition"], {"condition": r["condition"], "n": r["n"]})
    line[r["termination"]] = r["percent"]
  return list(out.values())


def _plot_overlap(rows: Sequence[dict], path: str, title: str) -> str:
  """The audit's Figure 3 layout: BASE–trained pairs left, trained–trained pairs right."""
  rows = [r for r in rows if r["overlap"] is not None]
  groups = [(g, [r for r in rows if r["group"] == g]) for g in ("BASE–trained",
                                                                "trained–trained")]
  groups = [(g, sel) for g, sel in groups if sel]
  fig, axes = plots.figure(max(7.0, 0.42 * len(rows) + 3.0), 4.0, ncols=len(groups),
                           width_ratios=[len(sel) + 1.5 for _, sel in groups])
  axes = [axes] if len(groups) == 1 else list(axes)
  for k, (ax, (g, sel)) in enumerate(zip(axes, groups)):
    bars = plots.Bars(None, [r["overlap"] for r in sel], [r["lo"] for r in sel],
                      [r["hi"] for r in sel], [r["points"] for r in sel])
    plots.bar_with_ci(ax, [f"{r['a']}–{r['b']}" for r in sel], [bars], ymax=1.0,
                      value_format="{:.2f}", title=f"{g}\nmean {np.mean(bars.values):.2f}",
                      ylabel="action-distribution overlap (0–1)" if k == 0 else "")
  fig.suptitle(title + "\nerror bars: 95% decision-point bootstrap; n = decision points",
               fontsize=9)
  return plots.save(fig, path)


def _plot_traces(rows: Sequence[dict], path: str, title: str) -> str:
  series = []
  for col, n_col, label in (("entity", "sampled", "entity reference"),
                            ("revision", "judged", "action revision"),
                            ("candidates", "judged", "multiple candidates")):
    vals, los, his, ns = [], [], [], []
    for r in rows:
      n = r[n_col]
      v = r[col]
      if v is None or not n:
        vals.append(np.nan), los.append(np.nan), his.append(np.nan), ns.append(0)
        continue
      _, lo, hi, _ = plots.success_with_ci([True] * round(v * n / 100) + [False] * (n - round(
          v * n / 100)))
      vals.append(v), los.append(lo), his.append(hi), ns.append(n)
    series.append(plots.Bars(label, vals, los, his, ns))
  fig, ax = plots.figure(max(6.0, 1.3 * len(rows) + 2), 3.8)
  plots.bar_with_ci(ax, [r["condition"] for r in rows], series, ylabel="steps (%)",
                    title=title + "\nerror bars: Clopper–Pearson 95%; n = steps judged")
  return plots.save(fig, path)
