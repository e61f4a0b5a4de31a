"""GenCoord model-free closed-loop evaluation: one suite, several conditions, paper-style tables.

Each condition names a model-free commitment policy in its `backend` field
(`agents.gencoord.policies.registry`) and a protocol condition
(forward: true / removed / alternative; feedback: local / correct / counterfactual /
centralized). Rows go to results.jsonl keyed by (condition, episode_id), so a rerun skips
finished episodes. summary.md holds the condition table (success, cluster-bootstrap CI,
Clopper-Pearson, validity, calls, wire bytes, actions), paired differences against the
reference condition and, for feedback suites, the commitment-field fidelity table (S19).
`success.png`: terminal success per condition (cluster-bootstrap 95% CI error bars, the same
interval as the table; n episodes per bar; the paper's figure as a black tick) beside model
calls per episode (cluster-bootstrap 95% CI).
"""
import json
import os
import types

import numpy as np
from absl import logging

from agents.gencoord import data, metrics, protocol, suites
from agents.gencoord.policies import registry as policies
from lib.report import plots, stats
from lib.run import tb
from lib.run.progress import progress
from lib.run.results import ResultsLog, markdown_table, write_summary


def _make_policy(spec, config, episodes):
  """Policies fitted on training rows get them here; the oracle gets the true bindings."""
  kwargs = {}
  if spec.backend == "case_table":
    rows = data.forward_rows(suites.suite(config.train_suite))
    kwargs["rows"] = [(r.context, r.target) for r in rows]
  elif spec.backend in ("tfidf_nn", "frozen_parser", "surface_table"):
    rows = data.forward_rows(suites.suite(config.train_suite))
    kwargs["rows"] = [(r.context, r.binding) for r in rows if r.stage == "sender_initial"]
  elif spec.backend == "oracle_factors":
    kwargs["truth"] = {ep.episode_id: ep.binding for ep in episodes}
  return policies.make(spec.backend, **kwargs)


def run(config, workdir):
  conditions = [types.SimpleNamespace(**dict(s)) for s in config.conditions]
  episodes = suites.suite(config.suite)
  if config.max_clusters:
    keep = set(sorted(suites.clusters(episodes))[:config.max_clusters])
    episodes = [ep for ep in episodes if ep.cluster_id in keep]
  log = ResultsLog(workdir, key=("condition", "episode_id"))
  runner = protocol.run_forward if config.protocol == "forward" else protocol.run_feedback
  writer = tb.writer(workdir)
  # world="live": every episode executes on a flying-squid server with Mineflayer bots.
  live = None
  if config.world == "live":
    # Function-local: the live runtime starts the Node bridge (flying-squid, Mineflayer).
    from envs.minecraft.live import eval_hooks
    live = eval_hooks.open_runtime(config, workdir)
  elif config.world != "sim":
    raise ValueError(f"config.world must be 'sim' or 'live', got {config.world!r}")
  try:
    _run_conditions(config, conditions, episodes, log, runner, live)
  finally:
    if live is not None:
      live.close()
  rows = log.rows()
  log.close()
  return _report(config, workdir, conditions, episodes, rows, writer, live)


def _run_conditions(config, conditions, episodes, log, runner, live):
  for spec in conditions:
    todo = [ep for ep in episodes
            if not log.has({"condition": spec.name, "episode_id": ep.episode_id})]
    if not todo:
      continue
    policy = _make_policy(spec, config, todo)
    # Forward specs may name a commitment horizon ("multi" by default, or "single").
    extra = {"horizon": vars(spec).get("horizon", "multi")} if config.protocol == "forward" else {}
    if live is not None:
      extra["world"] = live.world_for
    bar = progress(total=len(todo), desc=spec.name, unit="episode")  # a line per 30 s without a TTY
    for k in range(0, len(todo), config.batch):
      for rec in runner(todo[k:k + config.batch], policy, spec.condition, **extra):
        row = metrics.episode_row(rec)
        row["condition"] = spec.name
        if live is not None:
          row["world_s"] = live.episode_seconds.get(rec.ep.episode_id)
        log.append(json.loads(json.dumps(row, default=list)))
        bar.update()
    bar.close()
    logging.info("gencoord_eval: condition %s done (%d episodes)", spec.name, len(todo))


def _report(config, workdir, conditions, episodes, rows, writer, live):
  by_condition = {s.name: [r for r in rows if r["condition"] == s.name]
                  for s in conditions}
  table = []
  for i, spec in enumerate(conditions):
    row = metrics.condition_row(spec.name, by_condition[spec.name], config.n_resamples,
                                config.bootstrap_seed + i)
    # The paper table names only the conditions the paper reports.
    row["paper_%"] = config.paper[spec.name] if spec.name in config.paper else ""
    table.append(row)
    writer.add_scalar(f"gencoord/{config.suite}/{spec.name}/success", row["success_%"], 0)
  paired = [metrics.paired_row(s.name, config.reference, by_condition[config.reference],
                               by_condition[s.name], config.n_resamples,
                               config.paired_seed + i)
            for i, s in enumerate(conditions) if s.name != config.reference]
  notes = (f"Suite `{config.suite}` ({len(suites.clusters(episodes))} semantic clusters, "
           f"{len(episodes)} role-view episodes per condition); model-free backends, so each "
           f"condition runs once per role view. Cluster-bootstrap CIs use "
           f"{config.n_resamples} resamples. {metrics.CONDITION_COLUMNS}"
           "\n\n## Paired differences (cluster bootstrap)\n\n"
           + markdown_table(paired))
  summary = {"suite": config.suite, "success": {r["condition"]: r["success_%"] for r in table},
             "paired": paired}
  if config.protocol == "feedback":
    blocks = [metrics.block_paired_row(s.name, config.reference, by_condition[config.reference],
                                       by_condition[s.name], suites.capability_pair,
                                       config.n_resamples, config.block_seed + i)
              for i, s in enumerate(conditions) if s.name != config.reference]
    summary["pair_block_paired"] = blocks
    notes += "\n## Matched-pair block sensitivity\n\n" + markdown_table(blocks)
  counterfactual = [s.name for s in conditions if s.condition == "counterfactual"]
  if config.protocol == "feedback" and counterfactual:
    fidelity = metrics.field_fidelity(by_condition[counterfactual[0]], episodes)
    summary["field_fidelity"] = fidelity
    notes += "\n## Counterfactual feedback: commitment fields\n\n" + markdown_table(fidelity)
  if live is not None:
    # Function-local: the live runtime's reporting sits with its Node bridge.
    from envs.minecraft.live import eval_hooks
    summary["live"], live_notes = eval_hooks.timing_report(live)
    notes += live_notes
  summary["figures"] = [_figure(config, workdir, conditions, by_condition)]
  notes += f"\n![success by condition]({summary['figures'][0]})\n"
  write_summary(workdir, summary, table, title=config.title, notes=notes,
                debug=config.debug)
  return summary


def _cluster_bars(config, conditions, by_condition, field, scale) -> plots.Bars:
  """Mean of `field` x scale per condition with the table's cluster-bootstrap 95% CI."""
  values, lo, hi, n = [], [], [], []
  for i, spec in enumerate(conditions):
    rows = by_condition[spec.name]
    means = {k: [float(np.mean(v))] for k, v in metrics.by_cluster(rows, field).items()}
    low, high = stats.bootstrap_ci(means, n_resamples=config.n_resamples,
                                   seed=config.bootstrap_seed + i) if means else (np.nan,) * 2
    values.append(scale * float(np.mean([float(r[field]) for r in rows])) if rows else np.nan)
    lo.append(scale * low)
    hi.append(scale * high)
    n.append(len(rows))
  return plots.Bars(None, values, lo, hi, n)


def _figure(config, workdir, conditions, by_condition) -> str:
  """success.png: success and model calls per episode, one bar per condition."""
  fig, (ax_success, ax_calls) = plots.figure(9, 4.2, ncols=2, width_ratios=(3, 2))
  names = [s.name for s in conditions]
  success = _cluster_bars(config, conditions, by_condition, "success", 100.0)
  if any(n in config.paper for n in names):   # the paper's figure as a black tick per bar
    success.reference = [float(config.paper[n]) if n in config.paper else np.nan for n in names]
  plots.bar_with_ci(ax_success, names, [success], ylabel="terminal success (% of episodes)",
                    xlabel="condition", title="Success (95% cluster-bootstrap CI)")
  calls = _cluster_bars(config, conditions, by_condition, "model_calls", 1.0)
  top = max(1.0, float(np.nanmax(np.asarray(calls.hi, dtype=float), initial=1.0)))
  plots.bar_with_ci(ax_calls, names, [calls], ylabel="model calls per episode",
                    xlabel="condition", ymax=float(np.ceil(top)), value_format="{:.2f}",
                    title="Model calls (95% cluster-bootstrap CI)")
  fig.suptitle(f"{config.title}{' (debug run)' if config.debug else ''}", fontsize=10)
  return os.path.basename(plots.save(fig, os.path.join(workdir, "success.png")))
