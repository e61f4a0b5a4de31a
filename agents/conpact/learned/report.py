"""The ConPAct study's report: summary.json (strict JSON), summary.md and study.png.

summary.md, in order: stage times; supervision data (rows, misperceiving rows, wrong beliefs);
base models (params, steps, loss); the online conditions with the base models (paper Tables 18/19
layout: avg@k, pass@k, pass^k, success + CI, return, steps; mismatch, coverage, cost, the Table 18
ablation, paired differences vs Plan-Act and Assertion -- copied from online/summary.md); then per
env and evaluated condition, the trained models' Tables 20-22 analogues and paired tests
(agents/conpact/study_tables.py). study.png: success with CIs and initial / residual D of every
pair under ConPAct-I (the base pair and every trained one), per env (agents/conpact/figure.py).
"""
import json
import os

from agents.conpact import figure
from lib.run.results import markdown_table, write_summary

ONLINE_COLS = ("success", "success_ci", "return", "steps", "D_step", "residual_D",
               "discussion_rate", "repair_rate", "coverage_planner", "coverage_actor",
               "comparable_checks", "planner_correct", "actor_correct", "calls/episode",
               "out_tokens/episode")


def _read(path: str) -> dict:
  with open(path, encoding="utf-8") as f:
    return json.load(f)


def _online_table(summary: dict, k: int) -> list[dict]:
  cols = (f"avg@{k}", f"pass@{k}", f"pass^{k}") + ONLINE_COLS
  return [{"env": r["env"], "condition": r["condition"], **{c: r.get(c) for c in cols}}
          for r in summary["table"]]


def _fmt(v):
  if v is None:
    return "–"
  if isinstance(v, float):
    return f"{v:.3f}"
  if isinstance(v, (list, tuple)) and len(v) == 2 and all(isinstance(x, float) for x in v):
    return f"[{v[0]:.3f}, {v[1]:.3f}]"
  return v


def _md(rows: list[dict]) -> str:
  return markdown_table([{c: _fmt(v) for c, v in r.items()} for r in rows]) if rows else "–\n"


def _figure_rows(evals: dict, condition: str) -> list[dict]:
  """Rows of `condition` in each eval dir's summary, named by the model (base pair first)."""
  out = []
  for name, d in evals.items():
    for r in _read(os.path.join(d, "summary.json"))["summary"]["table"]:
      if r["condition"] == condition:
        out.append({**r, "condition": name})
  return sorted(out, key=lambda r: r["env"])   # stable: the model order is kept per env


def write(config, workdir, stages, data, base, online_dir, tables) -> dict:
  """Writes the study's summary files.

  Args:
    config: the study config.
    workdir: the study's run directory.
    stages: the `lib.run.stages.Stages` of the run (timings).
    data: the data stage's result (per row set: path, rows, noisy, wrong).
    base: role -> its base training report.
    online_dir: the online conpact/eval workdir.
    tables: [{env, condition, table20, table21, table22, tests}] from study_tables (json, md).
  Returns:
    The summary dict (also in summary.json).
  """
  k = config.online.rollouts
  online = _read(os.path.join(online_dir, "summary.json"))["summary"]
  base_rows = [{"role": r, **{c: v for c, v in rep.items() if c != "export"}}
               for r, rep in base.items()]
  data_rows = [{"set": n, "rows": d["rows"], "noisy": d["noisy"], "wrong": d["wrong"]}
               for n, d in data.items()]
  trained = [{"env": t["env"], "condition": t["condition"],
              **{name: t[name][0] for name in ("table20", "table21", "table22", "tests")}}
             for t in tables]
  summary = {"label": config.label, "rollouts": k, "stages": stages.timings(), "data": data_rows,
             "base": base_rows, "online": {"table": _online_table(online, k),
                                           "ablation": online.get("ablation", []),
                                           "paired": online.get("paired", [])},
             "trained": trained}
  path = write_summary(
      workdir, summary, _online_table(online, k),
      title=f"ConPAct with trained models ({config.label})", debug=bool(config.debug),
      notes=(f"Online conditions with the base planner / actor on the evaluation split; {k} "
             "rollouts per instance; A = C capped at "
             f"{config.online.budget_cap or 'the paper budget'}; CIs: 95% cluster bootstrap "
             "over instances. D over comparable checks only (– = nothing comparable)."))
  evals = {"base": online_dir,
           **{n: os.path.join(workdir, "eval", n) for n in (r["name"] for r in config.recipes)}}
  fig_rows = _figure_rows(evals, "conpact_i")
  png = (figure.plot_demo(fig_rows, os.path.join(workdir, "study.png"),
                          f"ConPAct-I with trained pairs ({config.label})", k)
         if fig_rows else None)
  with open(path, "a", encoding="utf-8") as f:
    f.write("\n## Stages (wall / CPU seconds)\n\n" + _md(stages.timings()))
    f.write("\n## Supervision rows (source split; noisy = misperceiving demonstrator, wrong = "
            "belief differs from the truth)\n\n" + _md(data_rows))
    f.write("\n## Base models\n\n" + _md([{c: v for c, v in r.items() if c != "history"}
                                         for r in base_rows]))
    online_md = open(os.path.join(online_dir, "summary.md"), encoding="utf-8").read()
    f.write("\n## Online conditions, base models (from online/summary.md)\n\n")
    f.write(online_md.split("\n", 1)[1].replace("\n## ", "\n### ").replace(
        "Figure: ", "Figure: online/"))
    for t in tables:
      f.write(f"\n## Trained pairs: {t['env']}, evaluated with {t['condition']}\n\n")
      for name in ("table20", "table21", "table22", "tests"):
        f.write(t[name][1] + "\n")
    if png:
      f.write(f"\nFigure: {png}\n")
  return summary
