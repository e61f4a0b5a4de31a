"""Benchmark: rule-backend GenCoord closed-loop episodes per second, against a naive baseline.

The measured loop is the complete Algorithm S1 path with Rule-Minimal-Request: generate both
stages, parse, contract check, Resolve→, materialize, compile, execute in the world, verify.
Baseline (same run, same episodes): the same loop with the engineered shortcuts switched off —
every line parsed by the reference scanner (no regex fast path), no memoised composer texts,
branches or canonical paths, and a world deep-copied from its layout on every episode.
Timing (`lib.bench.rounds`): one warm-up call per side, then `rounds` interleaved rounds
(optimized, baseline, optimized, ...), each side `passes` passes over the suite per round. Both
rates are the median over rounds of wall-clock and process-CPU episodes/s (the CPU figure is less
sensitive to other processes sharing the machine), with the optimized/baseline ratio of medians and
its range over rounds. The summary records the load, CPU and threads; on a noisy run (load above
one per core) the headline ratios are null.
"""
import contextlib
import copy

from absl import logging

from agents.gencoord import dsl, materialize, protocol, suites, templates
from agents.gencoord.policies import composer
from agents.gencoord.policies import registry as policies
from envs.minecraft import world as W
from lib.bench.rounds import Rounds
from lib.run import tb
from lib.run.results import write_summary


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


def _side(episodes, policy, condition, passes, wins: list, naive: bool):
  """One timed call: `passes` passes over the suite (in the naive loop when `naive`); its
  successes are appended to `wins`."""
  def call():
    with naive_loop() if naive else contextlib.nullcontext():
      wins.append(sum(r.success for _ in range(passes)
                      for r in protocol.run_forward(episodes, policy, condition)))
  return call


def _rates(t: dict, wins: list, n: int) -> dict:
  """A table row from one side's timed rounds (`wins`: successes per timed call)."""
  return {"episodes": n * len(wins), "wall_s": sum(t["seconds_rounds"]),
          "episodes_per_s": t["per_s"]["median"], "episodes_per_s_min": t["per_s"]["min"],
          "episodes_per_s_max": t["per_s"]["max"],
          "cpu_episodes_per_s": n / t["cpu_s"]["median"],
          "success_%": 100.0 * sum(wins) / (n * len(wins))}


def run(config, workdir):
  episodes = suites.suite(config.suite)
  policy = policies.make(config.backend)
  with naive_loop():
    naive_policy = policies.make(config.backend)
  wins = {"fast": [], "slow": []}
  n = len(episodes) * config.passes
  timer = Rounds(config.rounds, warmup=1)
  t = timer.time({"fast": _side(episodes, policy, config.condition, config.passes, wins["fast"],
                                naive=False),
                  "slow": _side(episodes, naive_policy, config.condition, config.passes,
                                wins["slow"], naive=True)}, work=n)
  timed_wins = {k: v[-config.rounds:] for k, v in wins.items()}   # the warm-up call left out
  fast, slow = _rates(t["fast"], timed_wins["fast"], n), _rates(t["slow"], timed_wins["slow"], n)
  if fast["success_%"] != slow["success_%"]:
    raise RuntimeError(f"baseline and optimized loops disagree: {fast} vs {slow}")
  cmp = Rounds.compare(t["fast"], t["slow"])
  ratio = cmp["ratio"]
  cpu_ratio = fast["cpu_episodes_per_s"] / slow["cpu_episodes_per_s"]
  table = [{"loop": "optimized closed loop", **fast},
           {"loop": "baseline: scanner parse, no memo, deep-copied world", **slow}]
  writer = tb.writer(workdir)
  writer.add_scalar("gencoord_bench/episodes_per_s", fast["episodes_per_s"], 0)
  writer.add_scalar("gencoord_bench/baseline_episodes_per_s", slow["episodes_per_s"], 0)
  line = (f"rule-backend closed loop: {fast['episodes_per_s']:.0f} episodes/s wall "
          f"({fast['cpu_episodes_per_s']:.0f}/s CPU) vs baseline "
          f"{slow['episodes_per_s']:.0f}/s wall ({slow['cpu_episodes_per_s']:.0f}/s CPU): "
          f"ratio {ratio:.2f}x wall [{cmp['ratio_min']:.2f}-{cmp['ratio_max']:.2f}], "
          f"{cpu_ratio:.2f}x CPU; goal >= {config.goal}/s. " + timer.note())
  print(line)
  logging.info(line)
  summary = {"episodes_per_s": fast["episodes_per_s"],
             "cpu_episodes_per_s": fast["cpu_episodes_per_s"],
             "baseline_episodes_per_s": slow["episodes_per_s"], "ratio": timer.headline(ratio),
             "ratio_min": cmp["ratio_min"], "ratio_max": cmp["ratio_max"],
             "cpu_ratio": timer.headline(cpu_ratio), "goal": config.goal,
             "meets_goal": fast["cpu_episodes_per_s"] >= config.goal,
             "noisy": timer.noisy, "machine": timer.machine()}
  write_summary(workdir, summary, table, title="GenCoord closed-loop throughput",
                notes=line + f"\n\nSuite `{config.suite}`, backend `{config.backend}`, "
                             f"condition `{config.condition}`.",
                debug=config.debug)
  return summary
