"""Serve a Flax model over an OpenAI-compatible HTTP API, so other processes can use it.

`config.checkpoint` is a Hugging Face-format directory (config.json + safetensors + tokenizer);
empty means the embedded default (a tokenizer trained here and a random qwen3-tiny model, saved
to `<workdir>/tiny_model` so it can be reloaded or served elsewhere). Once listening, the server
writes `<workdir>/server.json` ({"url", "host", "port", "model", "pid"}); with `port=0` that file
is how callers learn the port. It serves until killed, or for `duration_s` seconds when > 0, and
then writes usage totals to summary.json.
"""
import json
import os
import signal
import time

from absl import logging

from lib import models
from lib.llm.flax_backend import FlaxBackend
from lib.llm.openai_server import OpenAIServer
from lib.results import write_summary


def build_backend(config, workdir) -> FlaxBackend:
  kw = dict(seed=config.seed, max_batch=config.max_batch, min_batch=config.min_batch,
            model_name=config.model_name)
  if config.checkpoint:
    return FlaxBackend.from_pretrained(config.checkpoint, dtype=config.dtype, **kw)
  path = os.path.join(workdir, "tiny_model")
  backend = FlaxBackend.tiny(path, **kw)
  models.save_pretrained(backend.model, backend.model.config, path)
  return backend


def _write_atomic(path: str, payload: dict) -> None:
  tmp = path + ".tmp"
  with open(tmp, "w", encoding="utf-8") as f:
    json.dump(payload, f)
  os.replace(tmp, path)


def run(config, workdir):
  backend = build_backend(config, workdir)
  server = OpenAIServer(backend, config.model_name, host=config.host, port=config.port,
                        max_batch=config.max_batch, batch_window_s=config.batch_window_s).start()
  info = {"url": server.url, "host": server.host, "port": server.port,
          "model": config.model_name, "pid": os.getpid()}
  _write_atomic(os.path.join(workdir, "server.json"), info)
  print(f"[serve] {config.model_name} at {server.url}", flush=True)

  def stop(signum, frame):
    del signum, frame
    raise KeyboardInterrupt

  signal.signal(signal.SIGTERM, stop)
  start = time.time()
  try:
    while not config.duration_s or time.time() - start < config.duration_s:
      time.sleep(0.2)
  except KeyboardInterrupt:
    logging.info("serve: stopping on signal")
  finally:
    server.shutdown()
  usage = backend.usage.snapshot()
  summary = {**info, "served_s": time.time() - start, "batches": len(server.batches),
             "mean_batch": (sum(server.batches) / len(server.batches)) if server.batches else 0.0,
             **{k: v for k, v in usage.items() if k != "errors"}}
  write_summary(workdir, summary, [summary], title="OpenAI-compatible server")
  return summary
