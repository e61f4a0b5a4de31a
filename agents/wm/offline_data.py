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
import os
import time

import numpy as np
from absl import logging

from agents.wm import data
from agents.wm.metrics import aggregate, episode_metrics
from agents.wm.trajectory import ExpertPolicy, NoisyExpertPolicy, Trajectory, collect
from envs.text.scienceworld_env import ScienceWorld
from envs.text.sources import text_env_sources
from lib.run import tb
from lib.run.jsonl import write_jsonl
from lib.run.results import ResultsLog, write_summary


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


def collect_data(config, workdir):
  """Plays, samples and writes the world-model data of `config` (see the module doc).

  Args:
    config: a wm/data config (configs/wm/data.py).
    workdir: where results.jsonl, train.jsonl, train_mis.jsonl, heldout.jsonl and the summary go.
  """
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
  write_jsonl(os.path.join(workdir, "train.jsonl"), [s.to_json() for s in train])
  write_jsonl(os.path.join(workdir, "train_mis.jsonl"),
              [s.to_json() for s in data.with_mismatched_targets(train, seed=config.seed)])
  write_jsonl(os.path.join(workdir, "heldout.jsonl"), [s.to_json() for s in heldout])

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
