"""Latency and throughput of `experiments/serve.py`'s server: sequential vs concurrent clients.

One in-process server (`lib.serve.OpenAIServer`, 127.0.0.1, random weights of
`config.preset`) answers the same `config.requests` chat requests twice through the HTTP client
(`lib.backends.openai_http`): one at a time, then from `config.concurrency` concurrent clients whose
requests the server gathers into shared sampler batches. Each mode runs once untimed first, so
compiling is excluded; then `config.rounds` interleaved rounds (`lib.bench.rounds`: sequential,
batched, sequential, ...). Reported per mode: median wall time, requests/s (with min-max),
completion tokens/s (completion tokens only, both modes), per-request latency p50/p95 over every
timed round; the summary records the load, CPU and threads, and has no headline ratio when the run
was noisy (load above one per core).
"""
import os

import numpy as np

from lib.backends.flax_backend import FlaxBackend
from lib.backends.openai_http import OpenAIBackend
from lib.backends.protocol import SamplingParams
from lib.bench.rounds import Rounds
from lib.run.results import write_summary
from lib.serve import OpenAIServer, ServerLimits


def _conversations(n: int) -> list:
  return [[{"role": "system", "content": "Reply with one integer."},
           {"role": "user", "content": f"Range [0, {7 + i}]. Feedback: start."}]
          for i in range(n)]


def _send(client: OpenAIBackend, convs, params, calls: list) -> None:
  """Sends every conversation; the completions of each call are appended to `calls`."""
  out = client.generate(convs, params)
  failed = [c.error for c in out if not c.ok]
  if failed:
    raise RuntimeError(f"{len(failed)} requests failed: {sorted(set(failed))}")
  calls.append(out)


def _row(mode: str, clients: int, timed: dict, calls: list, sampler_calls: list) -> dict:
  """One table row from a mode's timed rounds (`calls`: its completions, one list per round)."""
  latency = np.asarray([c.latency_s for out in calls for c in out])
  tokens = [sum(c.output_tokens for c in out) for out in calls]
  wall = timed["seconds"]["median"]
  tokens_per_s = [t / s for t, s in zip(tokens, timed["seconds_rounds"])]
  return {"mode": mode, "clients": clients, "requests": len(calls[0]), "wall_s": wall,
          "requests_per_s": timed["per_s"]["median"],
          "requests_per_s_min": timed["per_s"]["min"],
          "requests_per_s_max": timed["per_s"]["max"],
          "tokens_per_s": float(np.median(tokens_per_s)),
          "completion_tokens": tokens[-1], "latency_p50_s": float(np.percentile(latency, 50)),
          "latency_p95_s": float(np.percentile(latency, 95)),
          "sampler_calls": int(np.median(sampler_calls))}


def run(config, workdir):
  """Times both modes; rows and summary.json/md in `workdir`."""
  backend = FlaxBackend.tiny(os.path.join(workdir, "tokenizer"), seed=config.seed,
                             preset=config.preset, max_batch=config.concurrency)
  limits = ServerLimits(max_new_tokens=config.max_tokens, max_batch=config.concurrency)
  server = OpenAIServer(backend, "bench", limits=limits, chunk_size=config.chunk_size).start()
  params = SamplingParams(max_tokens=config.max_tokens, temperature=0.0)
  convs = _conversations(config.requests)
  modes = {"sequential": 1, "batched": config.concurrency}
  calls = {mode: [] for mode in modes}
  sampler_calls = {mode: [] for mode in modes}
  clients = {mode: OpenAIBackend(server.url, "bench", max_concurrency=n, timeout_s=600,
                                 max_retries=0) for mode, n in modes.items()}

  def side(mode):
    def call():
      before = len(server.batches)
      _send(clients[mode], convs, params, calls[mode])
      sampler_calls[mode].append(len(server.batches) - before)
    return call

  timer = Rounds(config.rounds, warmup=0)
  try:
    for mode in modes:   # warm-up: compiles each mode's batch shapes
      _send(clients[mode], convs, params, [])
    timed = timer.time({mode: side(mode) for mode in modes}, work=len(convs))
  finally:
    for client in clients.values():
      client.close()
    server.shutdown()
  rows = [_row(mode, n, timed[mode], calls[mode], sampler_calls[mode])
          for mode, n in modes.items()]
  seq, bat = rows
  cmp = Rounds.compare(timed["batched"], timed["sequential"])
  machine = timer.machine()
  summary = {"preset": config.preset, "requests": config.requests,
             "concurrency": config.concurrency, "max_tokens": config.max_tokens,
             "throughput_ratio": timer.headline(cmp["ratio"]),
             "throughput_ratio_min": cmp["ratio_min"], "throughput_ratio_max": cmp["ratio_max"],
             "sequential": seq, "batched": bat, "noisy": machine["noisy"], "machine": machine,
             "tokens_per_s_counts": "completion tokens only (prompt tokens not counted), both "
                                    "modes"}
  write_summary(workdir, summary, rows, title="Server: sequential vs batched requests",
                notes=f"{config.requests} greedy chat requests, max_tokens {config.max_tokens}, "
                      f"random {config.preset} weights, CPU; compile excluded (one untimed "
                      "round per mode); requests/s is the median over rounds. " + timer.note())
  return summary
