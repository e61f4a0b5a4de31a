"""Benchmark: the batched host loop against one-episode-at-a-time, same model, same episodes.

Runs `episodes` GuessEnv episodes with the one-role PromptAgent on a Flax backend (embedded tiny
random model by default -- it guesses badly, so every episode uses its whole budget and both modes
do identical work). Baseline: `max_live=1`, i.e. one model call per request, the way a per-episode
agent loop would call a model. Batched: every live episode's request in one sampler call per step.
Both modes run once untimed first (XLA compiles), then `rounds` interleaved timed rounds
(`lib.bench.rounds`: sequential, batched, sequential, ...; every round plays the same episodes into
a fresh results file); greedy decoding makes their transcripts identical, which the run checks.
Prints the median episodes/s of both with its min-max and the speed-up ratio with its range over
rounds; the summary records the load, CPU and threads, and has no headline ratio when the run was
noisy (load above one per core). The envs run where `config.host` puts them (inline by default;
worker processes or Ray actors: lib/hostloop/executor_factory.py), in both modes alike.
"""
import itertools

from absl import logging

from envs.toy.guess_env import GuessEnv, parse_guess
from lib.backends import factory
from lib.backends.protocol import SamplingParams
from lib.bench.rounds import Rounds
from lib.hostloop.executor_factory import make_executor
from lib.hostloop.loop import EpisodeJob, HostLoop
from lib.hostloop.prompt_agent import PromptAgent
from lib.run import tb
from lib.run.results import ResultsLog, write_summary


def _specs(n: int, offset: int, params: SamplingParams, env_n: int):
  make_agent = lambda: PromptAgent("Guess the hidden integer. Reply with one integer.",
                                   render=lambda o: o, parse=parse_guess, fallback_action=0,
                                   params=params)
  return [EpisodeJob(key={"episode": offset + i}, env_seed=offset + i,
                      make_env=lambda: GuessEnv(env_n), make_agent=make_agent)
          for i in range(n)]


def _run(backend, config, specs, max_live, path):
  loop = HostLoop(backend, action_budget=config.action_budget, call_budget=config.call_budget,
                  max_live=max_live, show_progress=False,
                  executor=lambda: make_executor(config.host))
  with ResultsLog(path, key=("episode",)) as log:
    out = loop.run(specs, log)
    rows = sorted(log.rows(), key=lambda r: r["episode"])
  return out["steps"], rows


def run(config, workdir):
  backend = factory.make_backend(config.backend, workdir=workdir)
  params = SamplingParams(max_tokens=config.max_tokens, temperature=0.0)
  warm = _specs(config.episodes, 10_000, params, config.env_n)
  timed = _specs(config.episodes, 0, params, config.env_n)
  modes = {"sequential (max_live=1)": 1, "batched host loop": None}
  last, counter = {}, itertools.count()

  def side(name, max_live):
    tag = "seq" if max_live == 1 else "batched"

    def call():  # a fresh results file per call: a resumed log would skip every episode
      last[name] = _run(backend, config, timed, max_live, f"{workdir}/timed_{tag}_{next(counter)}")
    return call

  for max_live in modes.values():
    tag = "seq" if max_live == 1 else "batched"
    _run(backend, config, warm, max_live, f"{workdir}/warmup_{tag}")
  timer = Rounds(config.rounds, warmup=0)   # the untimed runs above are the warm-up
  t = timer.time({name: side(name, ml) for name, ml in modes.items()}, work=config.episodes)
  table, transcripts = [], {}
  for name in modes:
    steps, rows = last[name]
    transcripts[name] = [[e.get("text") for e in r["transcript"]] for r in rows]
    per_s = t[name]["per_s"]
    table.append({"mode": name, "episodes": len(rows),
                  "model_calls": sum(r["calls"] for r in rows), "backend_batches": steps,
                  "seconds": t[name]["seconds"]["median"], "episodes_per_s": per_s["median"],
                  "episodes_per_s_min": per_s["min"], "episodes_per_s_max": per_s["max"],
                  "output_tokens": sum(r["output_tokens"] for r in rows)})
  base, new = table
  same = transcripts[base["mode"]] == transcripts[new["mode"]]
  cmp = Rounds.compare(t[new["mode"]], t[base["mode"]])
  ratio = cmp["ratio"]
  writer = tb.writer(workdir)
  writer.add_scalar("host_loop_bench/speedup", ratio, 0)
  machine = timer.machine()
  summary = {"speedup_vs_sequential": timer.headline(ratio),
             "speedup_min": cmp["ratio_min"], "speedup_max": cmp["ratio_max"],
             "identical_transcripts": same, "backend": config.backend.kind,
             "executor": config.host.executor,
             "episodes": config.episodes, "noisy": machine["noisy"], "machine": machine,
             "tokens_per_s_counts": "not reported: episodes/s; output_tokens are the same in "
                                    "both modes (greedy, identical transcripts)"}
  msg = (f"[host_loop_bench] {config.episodes} episodes x {config.call_budget} calls, "
         f"{config.backend.kind} backend: sequential {base['episodes_per_s']:.2f} ep/s "
         f"({base['backend_batches']} backend calls), batched {new['episodes_per_s']:.2f} ep/s "
         f"({new['backend_batches']} backend calls): {ratio:.1f}x "
         f"[{cmp['ratio_min']:.1f}-{cmp['ratio_max']:.1f}]; identical transcripts: {same}. "
         + timer.note())
  print(msg, flush=True)
  logging.info(msg)
  write_summary(workdir, summary, table, title="Host loop: batched vs sequential model calls",
                notes=msg)
  if not same:
    raise RuntimeError("batched and sequential runs gave different greedy transcripts")
  return summary
