"""Multi-turn GRPO / GiGPO of a BabyAI actor over the host loop (configs/agentic/babyai.py).

Stages (lib/run/stages.py, <workdir>/stages.json; each skipped when done, the RL runs resume from
their checkpoints and from the rollouts of an unfinished iteration):
  data        ReAct-format actor rows from expert play (Farama's BabyAI bot) on SOURCE seeds,
              noise 0: ConPAct's demonstrations (`agents.conpact.demonstrations.actor_rows`,
              react=True), data/actor.jsonl
  tokenizer   ConPAct's BPE on those rows (none with model.checkpoint)
  sft         the warm start: ConPAct's role training through the one SFT loop
              (`agents.conpact.learned.train.train_role`), sft/export
  rl/<condition>/seed<k>
              episode-level GRPO (omega 0) or GiGPO (omega > 0) from the SFT actor: G episodes per
              SOURCE level, the ReAct agent (`agents.conpact.react.ReActAgent`, the prompt the
              rows were rendered in) sampling with the current params (`lib.hostloop.rollouts`),
              the update `lib.rl.agentic.AgenticTrainer` in the RL loop `lib.rl.loop.train`;
              with rollout_backend="served" the episodes sample from Accord's server (in
              process, or the `served` block's url) through `lib.serve.policy`, token ids and
              log-probs from the server, the weights pushed before every iteration;
              greedy evaluation on held-out EVALUATION seeds before the first and after the last
              iteration (eval/step<k>.jsonl)
  report      summary.json / summary.md (per condition and seed: greedy success before / after on
              the same instances with paired bootstrap intervals, rollout vs update seconds),
              curves.png (learning curves; the same scalars are in each run's tb/)
"""
import contextlib
import dataclasses
import functools
import os
import time

import jax
import numpy as np

from agents.conpact import demonstrations, textenv
from agents.conpact.base import AgentConfig
from agents.conpact.learned import rows as study_rows, train as role_train
from agents.conpact.learned.tokenizer import train_conpact_tokenizer
from agents.conpact.react import ReActAgent
from envs.minigrid import splits as minigrid_splits, text as minigrid_text
from lib.hostloop import rollouts
from lib.hostloop.executor_factory import make_executor
from lib.hostloop.loop import EpisodeJob, HostLoop
from lib.models import model_setup, tokenizer as tokenizer_lib
from lib.rl import agentic, grpo, loop as rl_loop
from lib.run.config_blocks import model_block
from lib.report import plots, stats
from lib.run.jsonl import read_jsonl, write_jsonl
from lib.run.results import write_summary
from lib.run.stages import Stages
from lib.serve import policy
from lib.train import optim, setup as train_setup
from lib.train.state import TrainState, nnx_apply_fn

ROLLOUT_BACKENDS = ("policy", "served")


def _data(config, workdir) -> dict:
  rows = []
  for task in config.tasks:
    rows += demonstrations.actor_rows(task, config.data.demos, 0.0, config.data.seed, react=True)
  path = os.path.join(workdir, "data", "actor.jsonl")
  write_jsonl(path, rows)
  return {"path": path, **study_rows.stats(rows)}


def _tokenizer(config, workdir, data) -> str | None:
  if config.model.checkpoint:
    return None
  path = os.path.join(workdir, "tokenizer")
  train_conpact_tokenizer(study_rows.corpus(read_jsonl(data["path"])), config.model.vocab_size,
                          path)
  return path


def _sft(config, workdir, data, tok_dir) -> dict:
  tok = tokenizer_lib.load_tokenizer(tok_dir) if tok_dir else None
  return role_train.train_role(read_jsonl(data["path"]), tok, config.model, config.sft,
                               os.path.join(workdir, "sft"), seed=config.sft_seed, tag="sft",
                               start_fresh=config.start_fresh)


def make_agent(turn_tokens: int, temperature: float) -> ReActAgent:
  """The ReAct actor, prompting exactly as the ReAct demonstration rows were rendered."""
  return ReActAgent(textenv.MINIGRID_TASK,
                    AgentConfig(actor_max_tokens=turn_tokens, temperature=temperature))


def task_jobs(tasks, seeds_per_task, group_size: int, agent) -> list[EpisodeJob]:
  """G episodes of every (task, seed): one group each, numbered across tasks.

  Args:
    tasks: BabyAI task ids.
    seeds_per_task: per task, the env seeds of its groups.
    group_size: G.
    agent: the agent factory.
  Returns:
    EpisodeJobs keyed {"group", "member"}, with "task" and "instance" in each row.
  """
  jobs = []
  for task, seeds in zip(tasks, seeds_per_task):
    make_env = functools.partial(minigrid_text.text_env, task)
    first = len(jobs) // group_size   # this task's groups follow the previous tasks'
    for job in rollouts.group_jobs(seeds, group_size, make_env, agent):
      job.key["group"] += first
      job.extra.update(task=task, instance=f"{task}/{job.env_seed}")
      jobs.append(job)
  return jobs


def _train_seeds(config, seed: int, it: int) -> list[list[int]]:
  """This iteration's SOURCE levels per task: a function of (seed, iteration) only, so a resumed
  run draws the ones an uninterrupted run does."""
  rng = np.random.default_rng([seed, it])
  source = np.asarray(textenv.MINIGRID_SOURCE_SEEDS)
  return [rng.choice(source, config.rl.groups_per_task, replace=False).tolist()
          for _ in config.tasks]


def _rl(config, workdir, export: str, condition: str, seed: int) -> dict:
  """One RL run from the SFT actor; returns its records, evaluation files and time split."""
  if config.rollout_backend not in ROLLOUT_BACKENDS:
    raise ValueError(f"rollout_backend={config.rollout_backend!r}; valid: {ROLLOUT_BACKENDS}")
  run_dir = os.path.join(workdir, "rl", condition, f"seed{seed}")
  block = model_block(**{**dict(config.model), "checkpoint": export})
  model, _, tok = model_setup.build_model(block, seed=seed)
  apply_fn, params = nnx_apply_fn(model, compute_dtype=model_setup.compute_dtype(block))
  tx = optim.from_config(config.optim, config.rl.iterations)
  g_cfg = grpo.GRPOConfig.from_config(config.grpo)
  a_cfg = dataclasses.replace(agentic.AgenticConfig.from_config(config.agentic),
                              omega=float(config.conditions[condition]))
  held, stack = {}, contextlib.ExitStack()
  if config.rollout_backend == "served":   # closed (server stopped) in the finally below
    served = stack.enter_context(policy.served_policy(
        policy.ServedConfig.from_config(config.served), model, tok,
        turn_tokens=a_cfg.turn_tokens, seed=seed, max_batch=config.rl.max_batch))
    backend = served.backend
  else:
    served = None
    backend = rollouts.PolicyBackend(model, tok, lambda: held["trainer"].state.params,
                                     turn_tokens=a_cfg.turn_tokens, seed=seed,
                                     max_batch=config.rl.max_batch,
                                     compute_dtype=model_setup.compute_dtype(block))

  def sync(trainer) -> None:
    """The served policy gets the trainer's weights (once per step) before it samples."""
    if served is not None:
      served.sync(trainer.state.params, int(trainer.state.step))
  budget = config.budget
  # one executor for every iteration and evaluation of the run: worker processes or actors
  # (each importing JAX and compiling its env) are started once, not per host-loop run
  executor = rollouts.KeptExecutor(lambda: make_executor(config.host))

  def loop(loop_seed: int) -> HostLoop:
    return HostLoop(backend, action_budget=budget, call_budget=budget, seed=loop_seed,
                    show_progress=False, executor=executor)

  def make_trainer(state, initial):
    held["trainer"] = agentic.AgenticTrainer(apply_fn, state, tx, g_cfg, a_cfg,
                                             ref_params=initial)
    return held["trainer"]

  def iterate(trainer, it):
    t0 = time.perf_counter()
    sync(trainer)
    push_s = time.perf_counter() - t0
    agent = functools.partial(make_agent, a_cfg.turn_tokens, g_cfg.temperature)
    jobs = task_jobs(config.tasks, _train_seeds(config, seed, it), g_cfg.group_size, agent)
    key = jax.random.fold_in(jax.random.key(seed), it)
    metrics = rollouts.train_iteration(trainer, loop(1000 * seed + it), jobs,
                                       os.path.join(run_dir, "rollouts"), f"it{it:04d}.jsonl",
                                       tok.pad_token_id or 0, key)
    return {**metrics, "push_s": push_s}   # the served weight push (0 for "policy")

  # held-out EVALUATION levels (envs.minigrid.splits: seed 1000 + offset), never trained on
  eval_seeds = [[minigrid_splits.SEED_BASE + o for o in range(config.eval.per_task)]
                for _ in config.tasks]

  def evaluate(trainer):
    sync(trainer)
    agent = functools.partial(make_agent, a_cfg.turn_tokens, 0.0)   # greedy
    jobs = task_jobs(config.tasks, eval_seeds, 1, agent)
    name = f"step{int(trainer.state.step)}.jsonl"
    eps, dropped, rows = rollouts.collect(loop(0), jobs, os.path.join(run_dir, "eval"), name)
    del eps, dropped
    return {"eval_success": float(np.mean([r["success"] for r in rows]))}

  try:
    run = rl_loop.train(
        TrainState.create(params, tx), make_trainer, iterate, config.rl.iterations, run_dir,
        rl_loop.RLLoopConfig(prefix="agentic/", log_every=1, ckpt_every=config.rl.ckpt_every,
                             start_fresh=train_setup.fresh_start(config)),
        record=lambda m: {k: m[k] for k in RECORDED if k in m}, evaluate=evaluate)
  finally:
    executor.shutdown()
    stack.close()
  steps = sorted(int(f[4:-6]) for f in os.listdir(os.path.join(run_dir, "eval"))
                 if f.startswith("step") and f.endswith(".jsonl") and f[4:-6].isdigit())
  return {"condition": condition, "seed": seed, "omega": a_cfg.omega, "records": run.records,
          "before": os.path.join(run_dir, "eval", f"step{steps[0]}.jsonl"),
          "after": os.path.join(run_dir, "eval", f"step{steps[-1]}.jsonl"),
          "wall_s": run.wall_s, "cpu_s": run.cpu_s, "tokens_seen": run.tokens_seen}


# ---- report ---------------------------------------------------------------------------------

# Per-iteration scalars kept in the RL checkpoints' records (the learning curves).
RECORDED = ("success", "return_mean", "score_mean", "ref_kl", "entropy", "response_len_mean",
            "rollout_s", "update_s", "push_s", "episodes", "dropped", "turns", "eval_success")
CURVES = (("success", "training success (share)"),
          ("return_mean", "return (reward / episode)"),
          ("ref_kl", "KL to SFT actor (nats / token)"),
          ("entropy", "entropy (nats / token)"),
          ("response_len_mean", "reply length (tokens)"))


def _outcomes(path: str) -> dict[str, bool]:
  return {r["instance"]: bool(r["success"]) for r in read_jsonl(path)}


def run_row(run: dict, n_resamples: int, seed: int) -> dict:
  """One RL run's table row: success before / after on the same instances, the paired bootstrap
  interval of the difference (instances resampled), and the time split.

  Args:
    run: the `rl/<condition>/seed<k>` stage's result.
    n_resamples, seed: of the bootstrap.
  Returns:
    condition, seed, omega, instances, success_before, success_after, diff, diff_lo, diff_hi
    (null without instances), iterations, rollout_s, update_s, rollout_share, dropped.
  """
  before, after = _outcomes(run["before"]), _outcomes(run["after"])
  keys = sorted(set(before) & set(after))
  a = {k: [float(after[k])] for k in keys}
  b = {k: [float(before[k])] for k in keys}
  lo, hi = stats.paired_bootstrap_ci(a, b, n_resamples=n_resamples, seed=seed) if keys else (
      None, None)
  recs = run["records"]
  roll = float(sum(r.get("rollout_s", 0.0) for r in recs))
  upd = float(sum(r.get("update_s", 0.0) for r in recs))
  return {"condition": run["condition"], "seed": run["seed"], "omega": run["omega"],
          "instances": len(keys),
          "success_before": float(np.mean([before[k] for k in keys])) if keys else None,
          "success_after": float(np.mean([after[k] for k in keys])) if keys else None,
          "diff": float(np.mean([after[k] - before[k] for k in keys])) if keys else None,
          "diff_lo": lo, "diff_hi": hi, "iterations": len(recs), "rollout_s": round(roll, 1),
          "update_s": round(upd, 1),
          "rollout_share": round(roll / (roll + upd), 3) if roll + upd else None,
          "dropped": int(sum(r.get("dropped", 0) for r in recs))}


def plot_curves(runs: list[dict], path: str) -> str:
  """Per-iteration curves of every run: one panel per scalar of CURVES, a line per run (colour =
  condition, line style = seed)."""
  fig, axes = plots.figure(width=3.2 * len(CURVES), height=3.0, ncols=len(CURVES))
  conditions = sorted({r["condition"] for r in runs})
  for ax, (key, label) in zip(axes, CURVES):
    for run in runs:
      ys = [rec.get(key) for rec in run["records"]]
      xs = [i + 1 for i, y in enumerate(ys) if y is not None]
      if not xs:
        continue
      c = conditions.index(run["condition"])
      style = ("-", "--", ":", "-.")[run["seed"] % 4]
      # open markers of another shape per condition: identical curves stay visible
      ax.plot(xs, [y for y in ys if y is not None], style, color=f"C{c}", marker="os^D"[c % 4],
              markersize=4 + 2 * c, fillstyle="full" if c == 0 else "none",
              label=f"{run['condition']} seed {run['seed']}")
    ax.set_xlabel("iteration")
    ax.set_ylabel(label)
    ax.xaxis.get_major_locator().set_params(integer=True)
  axes[0].legend(fontsize=7)
  return plots.save(fig, path)


def report(config, workdir: str, data: dict, sft: dict, runs: list[dict],
           stage_rows: dict) -> dict:
  """summary.json, summary.md and curves.png of the study.

  Args:
    config: the study config.
    workdir: the run directory.
    data: the data stage's result (row counts).
    sft: the SFT stage's report.
    runs: the RL stages' results.
    stage_rows: stages.json's records (wall / CPU seconds per stage).
  Returns:
    The summary dict.
  """
  table = [run_row(r, config.eval.n_resamples, config.seed) for r in runs]
  pooled = {}
  for cond in config.conditions:
    rows = [t for t in table if t["condition"] == cond and t["instances"]]
    pooled[cond] = {
        "seeds": len(rows),
        "success_before": float(np.mean([t["success_before"] for t in rows])) if rows else None,
        "success_after": float(np.mean([t["success_after"] for t in rows])) if rows else None}
  roll = sum(t["rollout_s"] for t in table)
  upd = sum(t["update_s"] for t in table)
  summary = {"tasks": list(config.tasks), "conditions": dict(config.conditions),
             "seeds": list(config.seeds), "eval_instances": table[0]["instances"] if table else 0,
             "sft_rows": sft.get("rows"), "sft_steps": sft.get("steps"),
             "sft_loss_first": sft.get("loss_first"), "sft_loss_last": sft.get("loss_last"),
             "data_rows": data.get("rows"), "pooled": pooled, "rollout_s": round(roll, 1),
             "update_s": round(upd, 1),
             "rollout_share": round(roll / (roll + upd), 3) if roll + upd else None,
             "stage_wall_s": {k: round(v.get("wall_s", 0.0), 1) for k, v in stage_rows.items()}}
  curves = plot_curves(runs, os.path.join(workdir, "curves.png")) if runs else None
  notes = (f"Greedy success on {summary['eval_instances']} held-out instances "
           f"(evaluation seeds of {', '.join(config.tasks)}) before and after RL from the SFT "
           "actor, per condition and seed; diff_lo / diff_hi: 95% paired bootstrap interval of "
           "after - before over instances. rollout_s / update_s: seconds sampling episodes "
           "(model calls and env steps) vs updating the weights, summed over iterations. "
           f"Learning curves: {os.path.basename(curves) if curves else 'none'}; TensorBoard: "
           "rl/<condition>/seed<k>/tb.")
  write_summary(workdir, summary, table, title="Agentic GRPO / GiGPO on BabyAI", notes=notes,
                key=("condition", "seed"))
  return summary


def run(config, workdir):
  """Runs (or resumes) the study of `config` in `workdir`; returns the report's summary."""
  stages = Stages(workdir)
  data = stages.run("data", lambda: _data(config, workdir))
  tok_dir = stages.run("tokenizer", lambda: _tokenizer(config, workdir, data))
  sft = stages.run("sft", lambda: _sft(config, workdir, data, tok_dir))
  runs = []
  for condition in config.conditions:
    for seed in config.seeds:
      runs.append(stages.run(f"rl/{condition}/seed{seed}",
                             functools.partial(_rl, config, workdir, sft["export"], condition,
                                               seed)))
  return stages.run("report", lambda: report(config, workdir, data, sft, runs,
                                                           stages.rows), rerun=True)
