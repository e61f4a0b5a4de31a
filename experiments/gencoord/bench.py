"""Benchmark: rule-backend GenCoord closed-loop episodes per second, against a naive baseline.

The measured loop is the complete Algorithm S1 path with Rule-Minimal-Request: generate both
stages, parse, contract check, Resolve→, materialize, compile, execute in the world, verify.
Baseline (same run, same episodes): the same loop with the engineered shortcuts switched off —
every line parsed by the reference scanner (no regex fast path), no memoised composer texts,
branches or canonical paths, and a world deep-copied from its layout on every episode.
Both rates are reported as wall-clock and process-CPU episodes/s (the CPU figure is less
sensitive to other processes sharing the machine), with the optimized/baseline ratio.
"""
import contextlib
import copy
import time

from absl import logging

from agents.gencoord import dsl, materialize, protocol, suites, templates
from agents.gencoord.policies import composer
from agents.gencoord.policies import registry as policies
from envs.minecraft import world as W
from lib import tb
from lib.results import write_summary


@contextlib.contextmanager
def naive_loop():
  """Switch off the fast paths for the baseline measurement (restored on exit)."""
  memoised = (templates, composer, materialize)
  saved_fast_path, saved_memoise = dsl.FAST_PATH, [m.MEMOISE for m in memoised]
  original_reset = W.Layout.reset
  dsl.FAST_PATH = False
  for m in memoised:
    m.MEMOISE = False
  W.Layout.reset = lambda self: original_reset(copy.deepcopy(self))
  try:
    yield
  finally:
    dsl.FAST_PATH = saved_fast_path
    for m, v in zip(memoised, saved_memoise):
      m.MEMOISE = v
    W.Layout.reset = original_reset


def _measure(episodes, policy, condition, repeats):
  protocol.run_forward(episodes[:32], policy, condition)            # warm-up
  wall, cpu = time.perf_counter(), time.process_time()
  wins = 0
  for _ in range(repeats):
    wins += sum(r.success for r in protocol.run_forward(episodes, policy, condition))
  wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
  n = len(episodes) * repeats
  return {"episodes": n, "wall_s": wall, "cpu_s": cpu, "episodes_per_s": n / wall,
          "cpu_episodes_per_s": n / cpu, "success_%": 100.0 * wins / n}


def run(config, workdir):
  episodes = suites.suite(config.suite)
  policy = policies.make(config.backend)
  fast = _measure(episodes, policy, config.condition, config.repeats)
  with naive_loop():
    slow = _measure(episodes, policies.make(config.backend), config.condition,
                    config.baseline_repeats)
  if fast["success_%"] != slow["success_%"]:
    raise RuntimeError(f"baseline and optimized loops disagree: {fast} vs {slow}")
  ratio = fast["episodes_per_s"] / slow["episodes_per_s"]
  cpu_ratio = fast["cpu_episodes_per_s"] / slow["cpu_episodes_per_s"]
  table = [{"loop": "optimized closed loop", **fast},
           {"loop": "baseline: scanner parse, no memo, deep-copied world", **slow}]
  writer = tb.writer(workdir)
  writer.add_scalar("gencoord_bench/episodes_per_s", fast["episodes_per_s"], 0)
  writer.add_scalar("gencoord_bench/baseline_episodes_per_s", slow["episodes_per_s"], 0)
  line = (f"rule-backend closed loop: {fast['episodes_per_s']:.0f} episodes/s wall "
          f"({fast['cpu_episodes_per_s']:.0f}/s CPU) vs baseline "
          f"{slow['episodes_per_s']:.0f}/s wall ({slow['cpu_episodes_per_s']:.0f}/s CPU): "
          f"ratio {ratio:.2f}x wall, {cpu_ratio:.2f}x CPU; goal >= {config.goal}/s")
  print(line)
  logging.info(line)
  summary = {"episodes_per_s": fast["episodes_per_s"],
             "cpu_episodes_per_s": fast["cpu_episodes_per_s"],
             "baseline_episodes_per_s": slow["episodes_per_s"], "ratio": ratio,
             "cpu_ratio": cpu_ratio, "goal": config.goal,
             "meets_goal": fast["cpu_episodes_per_s"] >= config.goal}
  write_summary(workdir, summary, table, title="GenCoord closed-loop throughput",
                notes=line + f"\n\nSuite `{config.suite}`, backend `{config.backend}`, "
                             f"condition `{config.condition}`.",
                debug=config.get("debug"))
  return summary
