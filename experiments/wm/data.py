"""World-model data from offline trajectories: ScienceWorld, TextWorld and ALFWorld.

For each env source, plays every train and eval level with the env's expert (ScienceWorld gold
path, TextWorld walkthrough, ALFWorld planner) and `noisy_reps` seeded noisy experts (a random
action with probability `noise`), records each episode as one resumable row of results.jsonl,
then writes

  train.jsonl        N next-observation samples from train levels (seed 42)
  train_mis.jsonl    the same inputs with MIS targets (text-level derangement of the targets)
  heldout.jsonl      eval-level transitions absent from the training trajectories (seed 42)
  summary.md/json    sample counts and the behaviour table (success, AF, loop ratios, turns)

and benchmarks ScienceWorld stepping: this adapter (simulator calls only) against the package's
`ScienceWorldEnv.step` (which also builds look/inventory/valid-action lists every step), both on
the same JVM and the same gold actions, as steps per second and their ratio.
"""
import functools
import os
import time

import numpy as np
from absl import logging

from agents.wm import data
from agents.wm.metrics import aggregate, episode_metrics
from agents.wm.trajectory import ExpertPolicy, NoisyExpertPolicy, Trajectory, collect
from lib import tb
from lib.results import ResultsLog, write_summary


def text_env_sources(config, workdir, max_steps: int, gold: bool = True):
  """name -> (make_env(split), levels per split); envs are built lazily. `gold` makes
  ScienceWorld generate gold paths (needed by experts only; loads are slower with it)."""
  out = {}
  if config.scienceworld.enabled:
    from envs.text.scienceworld_env import ScienceWorld  # pylint: disable=import-outside-toplevel
    sw = config.scienceworld
    levels = {"train": _scienceworld_levels(sw.tasks, sw.train_variations, sw.per_task),
              "eval": _scienceworld_levels(sw.tasks, sw.eval_variations, sw.per_task)}
    out["scienceworld"] = (lambda split, lv=levels: ScienceWorld(
        lv[split], max_steps=max_steps, gold=gold), levels)
  if config.textworld.enabled:
    from envs.text.textworld_env import TextWorldGames, make_games  # pylint: disable=C0415
    tw = config.textworld
    games_dir = tw.games_dir or os.path.join(workdir, "textworld_games")
    games = {s: make_games(games_dir, seeds)
             for s, seeds in (("train", tw.train_seeds), ("eval", tw.eval_seeds))}
    out["textworld"] = (lambda split, g=games: _maybe_isolated(
        functools.partial(TextWorldGames, g[split], max_steps=max_steps), tw), games)
  if config.alfworld.enabled:
    from envs.text import alfworld_env  # pylint: disable=import-outside-toplevel
    root = config.alfworld.data_dir
    if not root:  # no real data: a tiny game of ALFWorld's format per split, marked as such
      from envs.text.alfworld_game import write_tiny_game  # pylint: disable=import-outside-toplevel
      root = os.path.join(workdir, "alfworld_tiny_data")
      write_tiny_game(root, split="train")
      write_tiny_game(root, split="valid_seen", obj="Egg", start="Fridge", goal="SinkBasin")
    games = {"train": alfworld_env.list_games(root, "train"),
             "eval": alfworld_env.list_games(root, config.alfworld.eval_split)}
    out["alfworld"] = (lambda split, g=games: _maybe_isolated(functools.partial(
        alfworld_env.ALFWorld, root, max_steps=max_steps, game_files=g[split]),
        config.alfworld), games)
  return out


def _maybe_isolated(factory, env_config):
  """TextWorld/ALFWorld games run jericho's Z-machine in-process, and jericho can abort the
  interpreter; `isolate` (default on) plays them in a child process (envs/text/isolated.py)."""
  if env_config.get("isolate", True):
    from envs.text.isolated import IsolatedEnv  # pylint: disable=import-outside-toplevel
    return IsolatedEnv(factory)
  return factory()


def _scienceworld_levels(tasks, variations, per_task: int) -> list[tuple[str, int]]:
  """(task, variation) pairs: `variations` is a list of indices, or a split name ("train",
  "dev", "test") read from the simulator's own split of each task (first `per_task` of it)."""
  if not isinstance(variations, str):
    return [(t, int(v)) for t in tasks for v in variations]
  from envs.text.scienceworld_env import ScienceWorld  # pylint: disable=import-outside-toplevel
  env = ScienceWorld([(tasks[0], 0)])
  try:
    return [(t, v) for t in tasks for v in env.variations(t, variations)[:per_task]]
  finally:
    env.close()


def _collect_all(config, workdir, log):
  sources = text_env_sources(config, workdir, config.max_steps)
  for name, (make_env, levels) in sources.items():
    for split in ("train", "eval"):
      env = None
      for level in range(len(levels[split])):
        for rep in range(1 + config.noisy_reps):
          key = {"env": name, "split": split, "level": level, "rep": rep}
          if log.has(key):
            continue
          env = env or make_env(split)
          policy = ExpertPolicy() if rep == 0 else NoisyExpertPolicy(
              config.noise, np.random.default_rng([config.seed, level, rep]))
          traj = collect(env, policy, seed=level)
          log.append({**key, "trajectory": traj.to_json(), **episode_metrics(traj)})
      if env is not None:
        env.close()


def _bench_scienceworld(config) -> dict:
  from envs.text.scienceworld_env import ScienceWorld  # pylint: disable=import-outside-toplevel
  task, variation = config.scienceworld.tasks[0], config.scienceworld.train_variations[0]
  env = ScienceWorld([(task, variation)], gold=True, max_steps=10**6)
  env.reset(0)
  gold = env.gold_actions()
  raw = env._sw  # pylint: disable=protected-access
  times = {"package_step": 0.0, "adapter_step": 0.0}
  for _ in range(config.bench_repeats):  # interleaved, so JVM warm-up hits both alike
    for label, step in (("package_step", raw.step), ("adapter_step", env.step)):
      env.reset(0)
      start = time.perf_counter()
      for a in gold:
        step(a)
      times[label] += time.perf_counter() - start
  gold = gold * config.bench_repeats
  env.close()
  return {"bench_steps": len(gold),
          "package_steps_per_s": len(gold) / times["package_step"],
          "adapter_steps_per_s": len(gold) / times["adapter_step"],
          "speedup_vs_package_step": times["package_step"] / times["adapter_step"]}


def run(config, workdir):
  log = ResultsLog(workdir, key=("env", "split", "level", "rep"))
  _collect_all(config, workdir, log)
  rows = log.rows()
  log.close()
  trajs = {s: [Trajectory.from_json(r["trajectory"]) for r in rows if r["split"] == s]
           for s in ("train", "eval")}
  train_pool = data.transitions(trajs["train"], config.history_window)
  train = data.sample(train_pool, config.n_train, seed=config.sample_seed)
  heldout = data.held_out(data.transitions(trajs["eval"], config.history_window),
                          train_pool, n=config.n_heldout, seed=config.sample_seed)
  data.save_jsonl(os.path.join(workdir, "train.jsonl"), train)
  data.save_jsonl(os.path.join(workdir, "train_mis.jsonl"),
                  data.with_mismatched_targets(train, seed=config.seed))
  data.save_jsonl(os.path.join(workdir, "heldout.jsonl"), heldout)

  table = []
  for env in sorted({r["env"] for r in rows}):
    for policy in ("expert", "noisy_expert"):
      sel = [r for r in rows if r["env"] == env and (r["rep"] == 0) == (policy == "expert")]
      if sel:
        table.append({"env": env, "policy": policy, **aggregate(sel)})
  summary = {"episodes": len(rows), "train_pool": len(train_pool), "train": len(train),
             "heldout": len(heldout),
             "alfworld_source": config.alfworld.data_dir or "tiny generated game (not real data)"}
  if config.scienceworld.enabled and config.bench_repeats > 0:
    summary.update(_bench_scienceworld(config))
  writer = tb.writer(workdir)
  for k, v in summary.items():
    if isinstance(v, (int, float)):
      writer.add_scalar(f"wm_data/{k}", v, 0)
  logging.info("wm_data: %s", summary)
  write_summary(workdir, summary, table, title="World-model data (offline trajectories)",
                notes="Expert and noisy-expert trajectories; behaviour figures in percent "
                      "(AF = action failure, LR = TIDE loop ratio, step- and trajectory-"
                      "normalised). CPU scale when run with :debug.")
