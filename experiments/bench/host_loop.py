"""Benchmark: the batched host loop against one-episode-at-a-time, same model, same episodes.

Runs `episodes` GuessEnv episodes with the one-role PromptAgent on a Flax backend (embedded tiny
random model by default -- it guesses badly, so every episode uses its whole budget and both modes
do identical work). Baseline: `max_live=1`, i.e. one model call per request, the way a per-episode
agent loop would call a model. Batched: every live episode's request in one sampler call per step.
Both modes run once untimed first (XLA compiles), then timed; greedy decoding makes their
transcripts identical, which the run checks. Prints episodes/s for both and the speed-up ratio.
"""
import time

from absl import logging

from lib import tb
from lib.llm import factory
from lib.llm.backend import SamplingParams
from lib.llm.guess_env import GuessEnv, parse_guess
from lib.llm.host_loop import EpisodeJob, HostLoop
from lib.llm.prompt_agent import PromptAgent
from lib.results import ResultsLog, write_summary


def _specs(n: int, offset: int, params: SamplingParams, env_n: int):
  make_agent = lambda: PromptAgent("Guess the hidden integer. Reply with one integer.",
                                   render=lambda o: o, parse=parse_guess, fallback_action=0,
                                   params=params)
  return [EpisodeJob(key={"episode": offset + i}, env_seed=offset + i,
                      make_env=lambda: GuessEnv(env_n), make_agent=make_agent)
          for i in range(n)]


def _run(backend, config, specs, max_live, path):
  loop = HostLoop(backend, action_budget=config.action_budget, call_budget=config.call_budget,
                  max_live=max_live, show_progress=False)
  with ResultsLog(path, key=("episode",)) as log:
    start = time.perf_counter()
    out = loop.run(specs, log)
    elapsed = time.perf_counter() - start
    rows = sorted(log.rows(), key=lambda r: r["episode"])
  return elapsed, out["steps"], rows


def run(config, workdir):
  backend = factory.make_backend(config.backend, workdir=workdir)
  params = SamplingParams(max_tokens=config.max_tokens, temperature=0.0)
  warm = _specs(config.episodes, 10_000, params, config.env_n)
  timed = _specs(config.episodes, 0, params, config.env_n)
  modes = {"sequential (max_live=1)": 1, "batched host loop": None}
  table, transcripts = [], {}
  for name, max_live in modes.items():
    tag = "seq" if max_live == 1 else "batched"
    _run(backend, config, warm, max_live, f"{workdir}/warmup_{tag}")
    elapsed, steps, rows = _run(backend, config, timed, max_live, f"{workdir}/timed_{tag}")
    calls = sum(r["calls"] for r in rows)
    transcripts[name] = [[e.get("text") for e in r["transcript"]] for r in rows]
    table.append({"mode": name, "episodes": len(rows), "model_calls": calls,
                  "backend_batches": steps, "seconds": elapsed,
                  "episodes_per_s": len(rows) / elapsed,
                  "output_tokens": sum(r["output_tokens"] for r in rows)})
  base, new = table
  same = transcripts[base["mode"]] == transcripts[new["mode"]]
  ratio = new["episodes_per_s"] / base["episodes_per_s"]
  writer = tb.writer(workdir)
  writer.add_scalar("host_loop_bench/speedup", ratio, 0)
  summary = {"speedup_vs_sequential": ratio, "identical_transcripts": same,
             "backend": config.backend.kind, "episodes": config.episodes}
  msg = (f"[host_loop_bench] {config.episodes} episodes x {config.call_budget} calls, "
         f"{config.backend.kind} backend: sequential {base['episodes_per_s']:.2f} ep/s "
         f"({base['backend_batches']} backend calls), batched {new['episodes_per_s']:.2f} ep/s "
         f"({new['backend_batches']} backend calls): {ratio:.1f}x; identical transcripts: {same}")
  print(msg, flush=True)
  logging.info(msg)
  write_summary(workdir, summary, table, title="Host loop: batched vs sequential model calls",
                notes=msg)
  if not same:
    raise RuntimeError("batched and sequential runs gave different greedy transcripts")
  return summary
