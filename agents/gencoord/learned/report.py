"""Tables, figures and summary.md for `experiments/gencoord/learned.py` (and the quickstart).

Condition table: terminal success with the cluster-bootstrap 95% CI (role views and seeds averaged
within a semantic cluster, 10,000 resamples) and the Clopper-Pearson interval over episodes, raw /
commitment validity, verified handoff, calls, input/output tokens, wire bytes, warm batch-1 TTC and
episode time p50/p95, batched episodes/s, and the paper's figure beside ours. Paired differences
against `eval.reference` use the cluster-paired bootstrap. Figures (PNG, lib/report/plots.py):
training loss curves, success by held-out template (Clopper-Pearson 95% error bars, n per bar), the
TTC histogram (bins from n, integer counts), and for conditions with a task-structure view the
visibility matrix (visibility_matrix.py). A debug run says so in the title, summary.json and the bar
verdict.
"""
import os

import numpy as np
from matplotlib.ticker import FormatStrFormatter, MaxNLocator, NullFormatter

from agents.gencoord import metrics, suites
from agents.gencoord.learned import split_audit, visibility_matrix
from lib.report import plots
from lib.run.results import markdown_table, write_summary


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
        # The paper table names only the conditions the paper reports.
        "paper": config.paper[s["name"]] if s["name"] in config.paper else "",
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


def _loss_figure(workdir, train_reports) -> str:
  fig, ax = plots.figure(6, 4)
  for name, rep in train_reports.items():
    if rep["history"]:
      steps, losses = zip(*rep["history"])
      ax.plot(steps, losses, marker="o", markersize=2, label=name)
  ax.set_yscale("log")
  # Ticks written plainly (0.6, 2 rather than 6x10^-1, 2x10^0). Minor ticks are labelled only
  # when the loss spans less than two decades: over a full run their labels collide.
  ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))
  low, high = ax.get_ylim()
  ax.yaxis.set_minor_formatter(FormatStrFormatter("%g") if high < 100 * low else NullFormatter())
  ax.set_xlabel("optimizer step")
  ax.set_ylabel("target-token loss (nats/token, log scale)")
  ax.set_title("SFT training loss", fontsize=9)
  ax.xaxis.set_major_locator(MaxNLocator(integer=True))
  if train_reports:
    ax.legend(fontsize=7, frameon=False)
  return os.path.basename(plots.save(fig, os.path.join(workdir, "train_loss.png")))


def _template_figure(workdir, rows_by, specs, debug) -> str:
  """Grouped bars: success per held-out template and condition, Clopper-Pearson 95% CI."""
  templates = sorted({r["template"] for s in specs for r in rows_by[s["name"]]})
  series = []
  for s in specs:
    cells = [plots.success_with_ci([r["success"] for r in rows_by[s["name"]]
                                    if r["template"] == t]) for t in templates]
    series.append(plots.Bars(s["name"], *map(list, zip(*cells))) if cells else
                  plots.Bars(s["name"], [], [], [], []))
  fig, ax = plots.figure(max(6.0, 0.35 * len(templates) * max(len(specs), 1) + 2), 4.4)
  plots.bar_with_ci(ax, templates, series, ylabel="terminal success (% of episodes)",
                    xlabel="held-out template",
                    title="Success by template (95% Clopper-Pearson CI; n = episodes)"
                          + (" (debug run)" if debug else ""))
  return os.path.basename(plots.save(fig, os.path.join(workdir, "success_by_template.png")))


def _ttc_figure(workdir, timing) -> str:
  fig, ax = plots.figure(6, 4)
  plots.count_histogram(ax, {name: 1000 * np.asarray(t["ttc"]) for name, t in timing.items()
                             if t.get("ttc")},
                        xlabel="time to commitment (ms, warm, batch 1)")
  ax.set_title("Time to commitment", fontsize=9)
  return os.path.basename(plots.save(fig, os.path.join(workdir, "ttc.png")))


def _plots(workdir, train_reports, rows_by, specs, timing, debug) -> list:
  out = [_loss_figure(workdir, train_reports),
         _template_figure(workdir, rows_by, specs, debug)]
  if any(t.get("ttc") for t in timing.values()):
    out.append(_ttc_figure(workdir, timing))
  return out


_SHOWN = 4        # template-bindings named per validation row (all are in validation.jsonl)


def validation_table(train_reports) -> list:
  """One row per validation of each model: step, exact-match rates, and the template-bindings
  not yet exact with the commitment field their first wrong token writes (the diagnosis)."""
  out = []
  for name, rep in train_reports.items():
    for v in rep.get("validation", []):
      fields: dict = {}
      for key, errs in v["errors"].items():          # template/binding/stage/r<view>
        template, binding, where = key.split("/", 2)
        per = fields.setdefault(f"{template}/{binding}", {})
        for field, n in errs.items():
          per[f"{where}:{field}"] = per.get(f"{where}:{field}", 0) + n
      # The least-learned bindings first, each with its most frequent first wrong field.
      worst = sorted(fields, key=lambda k: (v["per_binding"][k], k))
      missing = "; ".join(
          f"{k} {100 * v['per_binding'][k]:.0f}% ({max(fields[k], key=fields[k].get)})"
          for k in worst[:_SHOWN])
      if len(worst) > _SHOWN:
        missing += f"; +{len(worst) - _SHOWN} more"
      out.append({"model": name, "step": v["step"], "row_exact_%": 100 * v["row_exact"],
                  "cluster_exact_%": 100 * v["cluster_exact"], "stop": v["stop"],
                  "kept": v["step"] == rep.get("kept_step", rep["steps"]),
                  "not_exact (first wrong field)": missing or "-"})
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
  debug = config.debug
  figures = _plots(workdir, train_reports, rows_by, specs, timing, debug)
  train_table = [{"model": k, **{f: v[f] for f in ("rows", "drill_rows", "epochs", "batch",
                                                    "steps", "train_tokens", "params", "seq_len",
                                                    "mean_prompt_tokens", "mean_target_tokens")},
                  "drill_lead_steps": v.get("drill_lead_steps", 0),
                  "kept_step": v.get("kept_step", v["steps"]),
                  "budget_steps": v.get("budget_steps", v["steps"]),
                  "final_loss": v["history"][-1][1] if v["history"] else float("nan"),
                  "train_wall_s": v["wall_s"], "train_cpu_s": v["cpu_s"]}
                 for k, v in train_reports.items()]
  if any(v.get("reused_from") for v in train_reports.values()):
    for row, v in zip(train_table, train_reports.values()):   # wall and CPU are this run's
      row["trained_in"] = v.get("reused_from") or "this run"
  n_clusters = len(suites.clusters(eps))
  notes = (f"Suite `{config.eval.suite}`: {n_clusters} semantic clusters x 2 role views x "
           f"{len(config.seeds)} seed(s) {list(config.seeds)}. Greedy decoding, outputs capped "
           f"at 256 tokens. "
           f"Run wall {run_info['wall_s']:.0f} s, process CPU {run_info['cpu_s']:.0f} s "
           f"(data + tokenizer {run_info['data_tokenizer_s']:.1f} s, vocabulary "
           f"{run_info['vocab']}). {metrics.CONDITION_COLUMNS} `input_tok` / `output_tok` are "
           f"model tokens per episode.\n\n## Training\n\n" + markdown_table(train_table))
  validation_rows = validation_table(train_reports)
  if validation_rows:
    notes += ("\n## Validation (forward `intervention` split, teacher-forced greedy exact match)"
              "\n\n" + markdown_table(validation_rows))
  select = config.train.select or {}   # None: no validation split (configs set it)
  splits = split_audit.split_table(list(config.recipes), config.eval.suite, select.get("split"),
                                   config.train_clusters_per_template,
                                   config.train.drill.clusters_per_template)
  notes += ("\n## Data splits (prompts as the model reads them; `*_in_train`: also in the "
            "recipe's training rows)\n\n" + markdown_table(splits))
  if paired:
    notes += "\n## Paired differences (cluster bootstrap)\n\n" + markdown_table(paired)
  seeds = per_seed(rows_by, specs)
  if len(config.seeds) > 1:
    notes += "\n## Per seed (terminal success %)\n\n" + markdown_table(seeds)
  counterfactual = [s["name"] for s in specs if s.get("condition") == "counterfactual"]
  summary = {"suite": config.eval.suite, "clusters": n_clusters, "table": table,
             "paired": paired, "training": train_table, "run": run_info,
             "figures": figures, "per_seed": seeds, "validation": validation_rows,
             "splits": splits}
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
  if config.bar:
    first = table[0]
    met = (first["success_%"] >= config.bar.success_pct and
           (first["raw_valid_on_solved_%"] == 100.0))
    summary["bar_met"] = bool(met)
    verdict = "MET" if met else "NOT MET"
    if debug:   # a debug run trains for seconds: its verdict is no statement about the method
      verdict += " (debug run: shrunk data and training, so no statement about the method)"
    notes = (f"**Bar** (>= {config.bar.success_pct}% held-out success, 100% raw validity on "
             f"solved clusters): {verdict}.\n\n" + notes)
  notes += "\n" + " ".join(f"![{f}]({f})" for f in figures) + "\n"
  write_summary(workdir, summary, table, title=config.title, notes=notes, debug=debug)
  return summary
