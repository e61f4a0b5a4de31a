"""Latency and throughput of `experiments/serve.py`'s server: sequential vs concurrent clients.

One in-process server (`lib.llm.server.OpenAIServer`, 127.0.0.1, random weights of
`config.preset`) answers the same `config.requests` chat requests twice through the HTTP client
(`lib.llm.openai_http`): one at a time, then from `config.concurrency` concurrent clients whose
requests the server gathers into shared sampler batches. Each mode runs once untimed first, so
compiling is excluded. Reported per mode: wall time, requests/s, completion tokens/s, and
per-request latency p50/p95.
"""
import os
import time

import numpy as np

from lib.llm.backend import SamplingParams
from lib.llm.flax_backend import FlaxBackend
from lib.llm.openai_http import OpenAIBackend
from lib.llm.server import OpenAIServer, ServerLimits
from lib.results import write_summary


def _conversations(n: int) -> list:
  return [[{"role": "system", "content": "Reply with one integer."},
           {"role": "user", "content": f"Range [0, {7 + i}]. Feedback: start."}]
          for i in range(n)]


def _timed(client: OpenAIBackend, convs, params) -> dict:
  start = time.perf_counter()
  out = client.generate(convs, params)
  wall = time.perf_counter() - start
  failed = [c.error for c in out if not c.ok]
  if failed:
    raise RuntimeError(f"{len(failed)} requests failed: {sorted(set(failed))}")
  latency = np.asarray([c.latency_s for c in out])
  tokens = sum(c.output_tokens for c in out)
  return {"wall_s": wall, "requests_per_s": len(out) / wall, "tokens_per_s": tokens / wall,
          "completion_tokens": tokens, "latency_p50_s": float(np.percentile(latency, 50)),
          "latency_p95_s": float(np.percentile(latency, 95))}


def run(config, workdir):
  """Times both modes; rows and summary.json/md in `workdir`."""
  backend = FlaxBackend.tiny(os.path.join(workdir, "tokenizer"), seed=config.seed,
                             preset=config.preset, max_batch=config.concurrency)
  limits = ServerLimits(max_new_tokens=config.max_tokens, max_batch=config.concurrency)
  server = OpenAIServer(backend, "bench", limits=limits, chunk_size=config.chunk_size).start()
  params = SamplingParams(max_tokens=config.max_tokens, temperature=0.0)
  convs = _conversations(config.requests)
  rows = []
  try:
    for mode, clients in (("sequential", 1), ("batched", config.concurrency)):
      client = OpenAIBackend(server.url, "bench", max_concurrency=clients, timeout_s=600,
                             max_retries=0)
      _timed(client, convs, params)  # warm-up: compiles this mode's batch shapes
      warm = len(server.batches)
      row = {"mode": mode, "clients": clients, "requests": len(convs), **_timed(client, convs,
                                                                                 params)}
      row["sampler_calls"] = len(server.batches) - warm
      rows.append(row)
      client.close()
  finally:
    server.shutdown()
  seq, bat = rows
  summary = {"preset": config.preset, "requests": config.requests,
             "concurrency": config.concurrency, "max_tokens": config.max_tokens,
             "throughput_ratio": bat["requests_per_s"] / seq["requests_per_s"],
             "sequential": seq, "batched": bat}
  write_summary(workdir, summary, rows, title="Server: sequential vs batched requests",
                notes=f"{config.requests} greedy chat requests, max_tokens {config.max_tokens}, "
                      f"random {config.preset} weights, CPU; compile excluded (one untimed "
                      "round per mode).")
  return summary
