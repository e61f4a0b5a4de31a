"""Evaluation of the audit's conditions: pass@k, coverage tests, behaviour, prediction accuracy.

Each condition is a backend (BASE = the untrained model, GRPO-GT = its trained checkpoint, ...).
A run `(env, regime, "train")` plays training levels instead (the first `seen_levels`), labelled
`<regime>@seen` in every table: a diagnostic of tasks the policy saw, never a held-out result.

For every condition x (env, regime) x eval level, `samples` episodes run through `HostLoop` with
`WorldModelAuditAgent` at the configured temperature (rows keyed by condition/env/regime/level/
sample in results.jsonl, resumable); the envs run where `config.host` puts them (inline, worker
processes or Ray actors: lib/hostloop/executor_factory.py), each process reusing its envs across the
episodes it plays (envs/text/pool.py:PooledEnvFactory). Then, per (env, regime):

  pass@k for k in `ks` (unbiased), task-bootstrap 95% bands with the same draws for all conditions,
  a PNG of the curves; pairwise exact McNemar tests on solved/unsolved at pass@samples with Holm
  adjustment; action failure, loop ratios (step/trajectory-normalised), repeat ratio, turns;
  a domain breakdown (success and pass@k per ScienceWorld topic / ALFWorld task type / TextWorld
  game settings, agents/wm/domains.py) and the agent's chain-of-thought length per condition
  (words inside <think>, backend-counted reply tokens; mean and median).

Prediction accuracy: each condition predicts the next observation of the held-out transitions
(`heldout.jsonl` from experiments/wm/data.py) greedily; a judge (LLM backend or the offline
rule-based judge, named in the table) scores them.

Backends of kind "scripted" use `agents.wm.scripted.ScriptedAuditModel`: a random-admissible-
action stand-in for CPU mechanics checks, not a model result (the summary says so).
"""
import functools
import os
import re
import uuid

import numpy as np
from absl import logging

from agents.wm import data, domains, passk
from agents.wm.agent import WorldModelAuditAgent
from agents.wm.judge import JudgeItem, LLMJudge, RuleBasedJudge, prediction_accuracy
from agents.wm.metrics import aggregate, episode_metrics
from agents.wm.prompts import parse_action, parse_think
from agents.wm.rewards import extract_next_state
from agents.wm.scripted import ScriptedAuditModel
from agents.wm.trajectory import from_host_loop_row
from envs.text.pool import PooledEnvFactory, close_process_pools
from envs.text.sources import text_env_sources
from lib.backends.factory import make_backend
from lib.backends.protocol import SamplingParams
from lib.hostloop.executor_factory import make_executor
from lib.hostloop.loop import EpisodeJob, HostLoop, final_rows
from lib.run import tb
from lib.run.results import ResultsLog, markdown_table, write_summary

KEY = ("condition", "env", "regime", "level", "sample")
_THINK_OPEN = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)


def _runs(config):
  """(env, label, regime, split) per configured run. A run is (env, regime) on the env's eval
  levels, or (env, regime, "train") on its training levels (the first `seen_levels` when set),
  labelled `<regime>@seen`: a diagnostic of tasks the warm start saw, never a held-out result."""
  out = []
  for run in config.runs:
    env, regime, split = (tuple(run) + ("eval",))[:3]
    if split not in ("eval", "train"):
      raise ValueError(f"run {tuple(run)}: split must be 'eval' or 'train'")
    out.append((env, regime if split == "eval" else f"{regime}@seen", regime, split))
  return out


def _backend(cfg, workdir):
  cfg = dict(cfg)
  policy = ScriptedAuditModel(cfg.pop("p_garble", 0.1)) if cfg["kind"] == "scripted" else None
  return make_backend(cfg, workdir=workdir, policy=policy)


def _run_episodes(config, workdir, sources):
  log = ResultsLog(workdir, key=KEY + ("attempt",))
  params = SamplingParams(max_tokens=config.max_tokens, temperature=config.temperature)
  runs = _runs(config)
  # One env pool per (env, split) in each process that plays episodes: this one (host.executor
  # inline) or each worker (processes, ray), so a JVM serves many episodes either way. The run's
  # own id keeps a later evaluation in this process from leasing this one's envs.
  run_id = uuid.uuid4().hex
  make_envs = {(env, split): PooledEnvFactory(f"wm-eval/{run_id}/{env}/{split}",
                                              functools.partial(sources[env][0], split))
               for env, _, _, split in runs}
  try:
    for cond, bcfg in config.conditions.items():
      specs = []
      for env, label, regime, split in runs:
        n = len(sources[env][1][split])
        if split == "train" and config.seen_levels:
          n = min(n, config.seen_levels)      # the first training levels only
        for level in range(n):
          for sample in range(config.samples):
            specs.append(EpisodeJob(
                {"condition": cond, "env": env, "regime": label, "level": level,
                 "sample": sample},
                make_env=make_envs[(env, split)],
                make_agent=lambda env=env, regime=regime: WorldModelAuditAgent(
                    env, regime, history_window=config.history_window),
                env_seed=level))
      backend = _backend(bcfg, workdir)
      HostLoop(backend, action_budget=config.max_steps, call_budget=config.max_steps,
               default_params=params, max_live=config.max_live, seed=config.seed,
               executor=lambda: make_executor(config.host)).run(specs, log)   # bar on a TTY
      backend.close()
  finally:
    close_process_pools(f.key for f in make_envs.values())
  rows = final_rows(log.rows(), KEY + ("attempt",))
  log.close()
  return rows


def _prediction_accuracy(config, workdir) -> dict:
  if not config.heldout:
    return {}
  samples = data.load_samples(config.heldout)[:config.n_heldout]
  if config.judge.kind == "rule":
    judge = RuleBasedJudge()
  else:
    judge = LLMJudge(_backend(config.judge.backend, workdir))
  out = {}
  for cond, bcfg in config.conditions.items():
    backend = _backend(bcfg, workdir)
    replies = backend.generate([data.prompt_messages(s) for s in samples],
                               SamplingParams(max_tokens=config.predict_max_tokens,
                                              temperature=0.0))
    backend.close()
    items = [JudgeItem(s.env, s.task, s.obs, s.action, s.next_obs,
                       extract_next_state(r.text) if r.error is None else None)
             for s, r in zip(samples, replies)]
    out[cond] = prediction_accuracy(judge.judge(items))
  out["judge"] = judge.name
  return out


def evaluate(config, workdir):
  """Evaluates every condition of `config` (see the module doc).

  Args:
    config: a wm/eval config (configs/wm/eval.py).
    workdir: where results.jsonl, the pass@k PNGs and summary.json/md go.
  """
  sources = text_env_sources(config, workdir, config.max_steps, gold=False)
  rows = _run_episodes(config, workdir, sources)
  metrics = [{**episode_metrics(from_host_loop_row(r, env=r["env"])), **{k: r[k] for k in KEY}}
             for r in rows]
  pred = _prediction_accuracy(config, workdir)
  ks = [k for k in config.ks if k <= config.samples]
  table, tests, writer = [], [], tb.writer(workdir)
  for env, regime, _, _ in _runs(config):
    sel = [m for m in metrics if m["env"] == env and m["regime"] == regime]
    for m in sel:
      m["task_id"] = f"{env}/{m['level']}"
    counts = passk.counts_from_rows(sel)
    curves = passk.pass_at_k_curves(counts, ks)
    bands = passk.bootstrap_bands(counts, ks, n_resamples=config.n_resamples, seed=config.seed)
    png = passk.plot_pass_at_k(curves, bands, os.path.join(workdir, f"passk_{env}_{regime}.png"),
                               ks=ks, title=f"{env} / {regime} ({config.scale_label})",
                               n_tasks=len(next(iter(counts.values()))))
    logging.info("wrote %s", png)
    for r in passk.coverage_tests(counts):
      tests.append({"env": env, "regime": regime, **r})
    for cond in config.conditions:
      agg = aggregate([m for m in sel if m["condition"] == cond])
      row = {"env": env, "regime": regime, "condition": cond,
             **{f"pass@{k}": 100 * float(curves[cond][i]) for i, k in enumerate(ks)},
             f"pass@{ks[-1]}_lo": 100 * float(bands[cond][0][-1]),
             f"pass@{ks[-1]}_hi": 100 * float(bands[cond][1][-1]),
             "AF": agg["action_failure"], "LR_step": agg["loop_ratio_step"],
             "LR_traj": agg["loop_ratio_traj"], "repeat": agg["repeat_ratio"],
             "turns": agg["turns"], "env_errors": agg["env_errors"],
             "pred_acc": pred.get(cond, {}).get("accuracy", float("nan"))}
      table.append(row)
      for k in ks:
        writer.add_scalar(f"{env}/{regime}/{cond}/pass_at_k", row[f"pass@{k}"], k)
  domains = _domain_table(config, metrics, sources, ks)
  cot = _cot_table(config, rows)
  summary = {"scale": config.scale_label, "episodes": len(rows), "coverage_tests": tests,
             "prediction": pred, "domains": domains, "cot": cot,
             "backends": {c: dict(b)["kind"] for c, b in config.conditions.items()}}
  scripted = any(dict(b)["kind"] == "scripted" for b in config.conditions.values())
  md = write_summary(workdir, summary, table,
                title=f"World-model audit evaluation ({config.scale_label})",
                debug=config.debug,
                notes=("pass@k in percent with task-bootstrap 95% band at the largest k; AF = "
                       "action failure, LR = TIDE loop ratio (step / trajectory normalised), "
                       "repeat = repeated steps (all in percent); turns = mean agent turns per "
                       "episode; env_errors = episodes ended by a simulator error (left out of "
                       "the other columns); pred_acc = % of held-out transitions predicted "
                       "correctly; one pass@k figure per (env, regime): passk_<env>_<regime>.png. "
                       f"Prediction accuracy judge: {pred.get('judge', 'none')}."
                       + (" Backends of kind 'scripted' are random stand-ins: mechanics only, "
                          "not model results." if scripted else "")))
  with open(md, "a", encoding="utf-8") as f:
    f.write("\n## Domain breakdown\n\nPer (env, regime, domain): tasks, success (percent of "
            "episodes) and pass@k over the domain's tasks (percent).\n\n"
            + markdown_table(domains))
    f.write("\n## Chain-of-thought length\n\nPer agent reply: words inside <think> and "
            "backend-counted output tokens (mean / median); think_frac = replies with a "
            "<think> block, action_frac = replies with a parsed action.\n\n"
            + markdown_table(cot))


def _domain_table(config, metrics, sources, ks) -> list[dict]:
  """Success and pass@k per (env, regime, domain, condition); domains from agents/wm/domains."""
  out = []
  for env, regime, _, split in _runs(config):
    levels = sources[env][1][split]
    sel = [m for m in metrics if m["env"] == env and m["regime"] == regime]
    for m in sel:
      m["domain"] = domains.domain(env, levels[m["level"]])
    for dom in sorted({m["domain"] for m in sel}):
      part = [m for m in sel if m["domain"] == dom]
      counts = passk.counts_from_rows(part)
      curves = passk.pass_at_k_curves(counts, ks)
      for cond in config.conditions:
        mine = [m for m in part if m["condition"] == cond]
        out.append({"env": env, "regime": regime, "domain": dom, "condition": cond,
                    "tasks": len(counts[cond]),
                    "success": 100.0 * float(np.mean([m["success"] for m in mine])),
                    **{f"pass@{k}": 100 * float(curves[cond][i]) for i, k in enumerate(ks)}})
  return out


def _cot_table(config, rows) -> list[dict]:
  """Reasoning length of the agent's replies per (env, regime, condition)."""
  out = []
  for env, regime, _, _ in _runs(config):
    for cond in config.conditions:
      calls = [e for r in rows if r["env"] == env and r["regime"] == regime
               and r["condition"] == cond for e in r["transcript"]
               if e["type"] == "call" and e.get("error") is None]
      texts = [e.get("text") or "" for e in calls]
      words = [len(parse_think(t).split()) for t in texts]
      tokens = [int(e.get("output_tokens") or 0) for e in calls]
      stat = lambda f, x: float(f(x)) if x else float("nan")
      out.append({"env": env, "regime": regime, "condition": cond, "replies": len(calls),
                  "think_words_mean": stat(np.mean, words),
                  "think_words_median": stat(np.median, words),
                  "reply_tokens_mean": stat(np.mean, tokens),
                  "reply_tokens_median": stat(np.median, tokens),
                  "think_frac": stat(np.mean, [bool(_THINK_OPEN.search(t)) for t in texts]),
                  "action_frac": stat(np.mean, [parse_action(t) is not None for t in texts])})
  return out
