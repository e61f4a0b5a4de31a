"""The re-check study's comparison of arms (experiments/conpact/arms.py): summary.json,
summary.md and arms.png in the study's workdir.

One row per (run, env): the run's arm and pipeline seed; each condition's success with its 95%
cluster-bootstrap interval; ConPAct-I minus each reference condition (Plan-Act, Assertion) over
paired (instance, rollout) episodes with its paired-bootstrap 95% interval, the exact McNemar p
and that p Holm-adjusted over the run's comparisons in that env (the pre-registered family: two
comparisons per arm and seed); and ConPAct-I's discussion metrics (initial D, discussion and
repair rate, residual D, per-role correctness). Everything is read from each run's own
summary (agents/conpact/learned/study.py); a metric without inputs stays null.
"""
import json
import os

from lib.report import plots, stats
from lib.run.results import markdown_table, write_summary

TREATED = "conpact_i"
DISCUSSION = ("D_step", "discussion_rate", "repair_rate", "residual_D", "planner_correct",
              "actor_correct", "comparable_checks")


def _pct(v):
  return None if v is None else 100.0 * v


def _run_rows(name: str, sub, run_dir: str, comparisons) -> list[dict]:
  with open(os.path.join(run_dir, "online", "summary.json"), encoding="utf-8") as f:
    online = json.load(f)["summary"]
  out = []
  for env in sub.envs:
    table = {r["condition"]: r for r in online["table"] if r["env"] == env}
    if TREATED not in table:
      continue
    row = {"run": name, "arm": sub.arm, "pipeline": sub.pipeline, "discussion": sub.data.discussion,
           "recheck": sub.data.recheck if sub.data.discussion == "recheck" else sub.data.noise,
           "env": env, "episodes": table[TREATED].get("episodes")}
    for cond, r in table.items():
      row[f"{cond}_success"] = _pct(r.get("success"))
      ci = r.get("success_ci")
      row[f"{cond}_ci"] = None if ci is None else [_pct(ci[0]), _pct(ci[1])]
    tests = [next((t for t in online["paired"] if t["env"] == env and t["model"] == TREATED
                   and t["against"] == ref), None) for ref in comparisons]
    raw = [t["p_mcnemar"] if t else None for t in tests]
    known = [p for p in raw if p is not None]
    adjusted = iter(stats.holm(known).tolist() if known else [])
    for ref, t, p in zip(comparisons, tests, raw):
      row[f"minus_{ref}_pp"] = t["diff_pp"] if t else None
      row[f"minus_{ref}_ci95"] = t["ci95_pp"] if t else None
      row[f"minus_{ref}_p"] = p
      row[f"minus_{ref}_p_holm"] = next(adjusted) if p is not None else None
    for k in DISCUSSION:
      row[k] = _pct(table[TREATED].get(k))
    out.append(row)
  return out


def _fmt(v, ci=None) -> str:
  if v is None:
    return "–"
  text = f"{v:+.1f}" if ci is not None else f"{v:.1f}"
  return text + (f" [{ci[0]:+.1f}, {ci[1]:+.1f}]" if ci else "")


def _md_rows(rows: list[dict], conditions, comparisons) -> list[dict]:
  out = []
  for r in rows:
    m = {"run": r["run"], "env": r["env"],
         "discussion (error rate)": f"{r['discussion']} ({r['recheck']})",
         "episodes": r["episodes"]}
    for c in conditions:
      ci = r.get(f"{c}_ci")
      m[f"{c} success %"] = (_fmt(r.get(f"{c}_success")) +
                             (f" [{ci[0]:.1f}, {ci[1]:.1f}]" if ci else ""))
    for ref in comparisons:
      p = r[f"minus_{ref}_p_holm"]
      m[f"ConPAct-I − {ref} (pp) [95% CI], p Holm"] = (
          _fmt(r[f"minus_{ref}_pp"], r[f"minus_{ref}_ci95"] or ()) +
          ("" if p is None else f", {p:.3g}"))
    for k in DISCUSSION:
      m[k] = _fmt(r[k])
    out.append(m)
  return out


def _figure(rows: list[dict], conditions, path: str, label: str) -> str | None:
  envs = sorted({r["env"] for r in rows})
  if not rows:
    return None
  fig, axes = plots.figure(width=4.2 * len(envs), height=3.4, ncols=len(envs))
  axes = [axes] if len(envs) == 1 else list(axes)
  for ax, env in zip(axes, envs):
    mine = [r for r in rows if r["env"] == env]
    series = []
    for c in conditions:
      vals = [r.get(f"{c}_success") for r in mine]
      cis = [r.get(f"{c}_ci") or (float("nan"), float("nan")) for r in mine]
      series.append(plots.Bars(c, [float("nan") if v is None else v for v in vals],
                               [x[0] for x in cis], [x[1] for x in cis],
                               [r["episodes"] or 0 for r in mine]))
    plots.bar_with_ci(ax, [r["run"] for r in mine], series, ylabel="success (%)",
                      xlabel="run: arm (C redraw, R re-check) + pipeline seed",
                      title=f"{env} ({label})")
  return plots.save(fig, path)


def write(config, workdir: str, run_dirs: dict, debug: bool = False) -> dict:
  """Writes the comparison of the runs' studies.

  Args:
    config: the `arms=True` study config (configs/conpact/study.py).
    workdir: the arms study's run directory.
    run_dirs: run name -> its conpact/study workdir (whose online/summary.json is read).
    debug: whether this is a debug run (labelled as such).
  Returns:
    The summary dict (also in summary.json).
  """
  comparisons = list(config.comparisons)
  rows = [r for name, d in run_dirs.items()
          for r in _run_rows(name, config.runs[name], d, comparisons)]
  conditions = [x["name"] for x in next(iter(config.runs.values())).online.conditions]
  summary = {"label": config.label, "rows": rows, "runs": dict(run_dirs),
             "comparisons": comparisons}
  path = write_summary(
      workdir, summary, _md_rows(rows, conditions, comparisons),
      title=f"ConPAct re-check study: arms compared ({config.label})", debug=debug,
      key=("run", "env"),
      notes=("Per run (arm C: whole-belief redraw at the first glance's rate; arm R: targeted "
             "re-check at `recheck`; digit = pipeline seed) and env. Success in % with its 95% "
             "cluster bootstrap over instances; ConPAct-I minus each reference in points over "
             "paired (instance, rollout) episodes, paired bootstrap 95% CI, exact McNemar p "
             "Holm-adjusted over the comparisons of that run and env; discussion metrics of "
             "ConPAct-I in % (D over comparable checks; – = no inputs). Each run's own "
             "summary.md has its full tables."))
  png = _figure(rows, conditions, os.path.join(workdir, "arms.png"), config.label)
  if png:
    with open(path, "a", encoding="utf-8") as f:
      f.write(f"\nFigure: {png}\n")
  return summary
