"""Tables, figures and summary.md for `experiments/gencoord/learned.py` (and the quickstart).

Condition table: terminal success with the cluster-bootstrap 95% CI (role views and seeds
averaged within a semantic cluster, 10,000 resamples) and the Clopper-Pearson interval over
episodes, raw / commitment validity, verified handoff, calls, input/output tokens, wire bytes,
warm batch-1 TTC and episode time p50/p95, batched episodes/s, and the paper's figure beside
ours. Paired differences against `eval.reference` use the cluster-paired bootstrap.
Figures (PNG): training loss curves, success by template with CIs, TTC distribution, and for
conditions with a task-structure view the visibility matrix (visibility_matrix.py).
"""
import os

import numpy as np

from agents.gencoord import metrics, suites
from agents.gencoord.learned import visibility_matrix
from lib.results import markdown_table, write_summary


def _pct(xs, q):
  return float(np.percentile(xs, q)) if len(xs) else float("nan")


def _solved_validity(rows) -> tuple:
  """(clusters where every episode succeeded, raw validity % over their episodes)."""
  solved = {k for k, v in metrics.by_cluster(rows).items() if all(v)}
  sub = [r for r in rows if r["cluster_id"] in solved]
  return len(solved), 100.0 * np.mean([r["raw_valid"] for r in sub]) if sub else float("nan")


def condition_table(config, rows_by, specs, timing, throughput) -> list:
  """One summary row per condition (success with CIs, validity, tokens, timing, paper figure).

  Args:
    config: the run config (`eval` bootstrap settings, `paper` figures).
    rows_by: condition name -> its result rows.
    specs: the evaluation conditions (dicts with `name`).
    timing: condition -> {"ttc": [s], "episode": [s]} (warm batch-1).
    throughput: condition -> batched episodes/s.
  Returns:
    One dict per condition, in `specs` order.
  """
  table = []
  for i, s in enumerate(specs):
    rows = rows_by[s["name"]]
    row = metrics.condition_row(s["name"], rows, config.eval.n_resamples,
                                config.eval.bootstrap_seed + i)
    n_solved, solved_valid = _solved_validity(rows)
    t = timing.get(s["name"], {})
    row.update({
        "solved_clusters": n_solved, "raw_valid_on_solved_%": solved_valid,
        "input_tok": float(np.mean([r["input_tokens"] for r in rows])),
        "output_tok": float(np.mean([r["output_tokens"] for r in rows])),
        "ttc_p50_s": _pct(t.get("ttc", []), 50), "ttc_p95_s": _pct(t.get("ttc", []), 95),
        "episode_p50_s": _pct(t.get("episode", []), 50),
        "episode_p95_s": _pct(t.get("episode", []), 95),
        "batched_eps_per_s": throughput.get(s["name"], float("nan")),
        "paper": config.paper.get(s["name"], ""),
    })
    for k in ("response_B", "aggregation_B", "actions"):
      row.pop(k, None)
    table.append(row)
  return table


def per_seed(rows_by, specs) -> list:
  """Per condition: success % of each seed's own model, and their mean / sample SD."""
  out = []
  for s in specs:
    by: dict = {}
    for r in rows_by[s["name"]]:
      by.setdefault(int(r["seed"]), []).append(bool(r["success"]))
    pct = {k: 100.0 * float(np.mean(v)) for k, v in sorted(by.items())}
    vals = list(pct.values())
    out.append({"condition": s["name"], **{f"seed {k}": v for k, v in pct.items()},
                "mean": float(np.mean(vals)) if vals else float("nan"),
                "sd": float(np.std(vals, ddof=1)) if len(vals) > 1 else float("nan")})
  return out


def _plots(workdir, train_reports, rows_by, specs, timing) -> list:
  # Function-local: pyplot is slow to import and needs the Agg backend chosen before it loads.
  import matplotlib
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt  # after matplotlib.use, see above
  out = []
  fig, ax = plt.subplots(figsize=(6, 4))
  for name, rep in train_reports.items():
    if rep["history"]:
      steps, losses = zip(*rep["history"])
      ax.plot(steps, losses, label=name)
  ax.set_yscale("log")
  ax.set_xlabel("optimizer step")
  ax.set_ylabel("target-token loss")
  ax.set_title("SFT training loss")
  ax.legend(fontsize=7)
  fig.tight_layout()
  out.append("train_loss.png")
  fig.savefig(os.path.join(workdir, out[-1]), dpi=120)
  plt.close(fig)

  fig, ax = plt.subplots(figsize=(7, 4))
  width = 0.8 / max(len(specs), 1)
  templates = sorted({r["template"] for s in specs for r in rows_by[s["name"]]})
  for k, s in enumerate(specs):
    rates = [100 * np.mean([r["success"] for r in rows_by[s["name"]] if r["template"] == t])
             for t in templates]
    ax.bar(np.arange(len(templates)) + k * width, rates, width, label=s["name"])
  ax.set_xticks(np.arange(len(templates)) + 0.4 - width / 2, templates, rotation=30,
                ha="right", fontsize=7)
  ax.set_ylabel("terminal success (%)")
  ax.set_ylim(0, 105)
  ax.legend(fontsize=7)
  ax.set_title("Held-out success by template")
  fig.tight_layout()
  out.append("success_by_template.png")
  fig.savefig(os.path.join(workdir, out[-1]), dpi=120)
  plt.close(fig)

  if any(t.get("ttc") for t in timing.values()):
    fig, ax = plt.subplots(figsize=(6, 4))
    for name, t in timing.items():
      if t.get("ttc"):
        ax.hist(1000 * np.asarray(t["ttc"]), bins=30, alpha=0.6, label=name)
    ax.set_xlabel("time to commitment (ms, warm, batch 1)")
    ax.set_ylabel("episodes")
    ax.legend(fontsize=7)
    fig.tight_layout()
    out.append("ttc.png")
    fig.savefig(os.path.join(workdir, out[-1]), dpi=120)
    plt.close(fig)
  return out


def write(config, workdir, rows, specs, eps, train_reports, timing, throughput, run_info,
          writer) -> dict:
  """Writes summary.json / summary.md, the PNG figures and TensorBoard scalars of a run.

  Args:
    config: the run config.
    workdir: where the files go.
    rows: every result row of the run (all conditions and seeds).
    specs: the evaluation conditions (dicts with `name`, optional `view` / `condition`).
    eps: the evaluation episodes (for cluster counts and the field-fidelity table).
    train_reports: "<recipe>/s<seed>" -> the SFT report of that model.
    timing, throughput: see `condition_table`.
    run_info: wall_s, cpu_s, data_tokenizer_s, vocab.
    writer: TensorBoard writer.
  Returns:
    The summary dict (also in summary.json).
  """
  rows_by = {s["name"]: [r for r in rows if r["condition"] == s["name"]] for s in specs}
  table = condition_table(config, rows_by, specs, timing, throughput)
  ref = config.eval.reference
  paired = [metrics.paired_row(s["name"], ref, rows_by[ref], rows_by[s["name"]],
                               config.eval.n_resamples, config.eval.paired_seed + i)
            for i, s in enumerate(specs) if s["name"] != ref]
  for r in table:
    writer.add_scalar(f"eval/{r['condition']}/success", r["success_%"], 0)
  figures = _plots(workdir, train_reports, rows_by, specs, timing)
  train_table = [{"model": k, **{f: v[f] for f in ("rows", "epochs", "batch", "steps",
                                                    "train_tokens", "params", "seq_len",
                                                    "mean_prompt_tokens", "mean_target_tokens")},
                  "final_loss": v["history"][-1][1] if v["history"] else float("nan"),
                  "train_wall_s": v["wall_s"], "train_cpu_s": v["cpu_s"]}
                 for k, v in train_reports.items()]
  n_clusters = len(suites.clusters(eps))
  notes = (f"Suite `{config.eval.suite}`: {n_clusters} semantic clusters x 2 role views x "
           f"{len(config.seeds)} seed(s). Greedy decoding, outputs capped at 256 tokens. "
           f"Run wall {run_info['wall_s']:.0f} s, process CPU {run_info['cpu_s']:.0f} s "
           f"(data + tokenizer {run_info['data_tokenizer_s']:.1f} s, vocabulary "
           f"{run_info['vocab']}).\n\n## Training\n\n" + markdown_table(train_table))
  if paired:
    notes += "\n## Paired differences (cluster bootstrap)\n\n" + markdown_table(paired)
  seeds = per_seed(rows_by, specs)
  if len(config.seeds) > 1:
    notes += "\n## Per seed (terminal success %)\n\n" + markdown_table(seeds)
  counterfactual = [s["name"] for s in specs if s.get("condition") == "counterfactual"]
  summary = {"suite": config.eval.suite, "clusters": n_clusters, "table": table,
             "paired": paired, "training": train_table, "run": run_info,
             "figures": figures, "per_seed": seeds}
  if counterfactual:
    fidelity = metrics.field_fidelity(rows_by[counterfactual[0]], eps)
    summary["field_fidelity"] = fidelity
    notes += "\n## Counterfactual feedback: commitment fields\n\n" + markdown_table(fidelity)
  if any(s.get("view") for s in specs):      # visibility study: the Figure S5 matrix
    matrix = visibility_matrix.cells(rows_by, specs, config.eval.n_resamples,
                                     config.eval.bootstrap_seed)
    summary["visibility"] = visibility_matrix.table(matrix, dict(config.paper))
    figures.append(visibility_matrix.heatmap(workdir, matrix, dict(config.paper)))
    notes += ("\n## Task-structure visibility matrix (terminal success %, cluster-bootstrap "
              "95% CI, paper Figure S5 beside)\n\n" + markdown_table(summary["visibility"]))
  if config.get("bar"):
    first = table[0]
    met = (first["success_%"] >= config.bar.success_pct and
           (first["raw_valid_on_solved_%"] == 100.0))
    summary["bar_met"] = bool(met)
    notes = (f"**Bar** (>= {config.bar.success_pct}% held-out success, 100% raw validity on "
             f"solved clusters): {'MET' if met else 'NOT MET'}.\n\n" + notes)
  notes += "\n" + " ".join(f"![{f}]({f})" for f in figures) + "\n"
  write_summary(workdir, summary, table, title=config.title, notes=notes)
  return summary
