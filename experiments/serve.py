"""Serve a Flax model over an OpenAI-compatible HTTP API, so other processes can use it.

`config.model` is the one `model` block (lib/models/model_setup.py): `checkpoint` a Hugging
Face-format directory (config.json + safetensors + tokenizer), served at `dtype`; empty means the
embedded default (a tokenizer trained here and a random qwen3-tiny model, saved to
`<workdir>/tiny_model` so it can be reloaded or served elsewhere). Once listening, the server writes
`<workdir>/server.json` ({"url", "host", "port", "model", "pid"}); with `port=0` that file is how
callers learn the port. It serves until SIGTERM/SIGINT (a clean stop, exit 0), or for `duration_s`
seconds when > 0, and then writes usage totals to summary.json. `limits` bound what a request may
ask for (lib/serve/admission.py: ServerLimits); `api_key_env` names an environment variable whose
key clients must send as a bearer token.
"""
import json
import os
import signal
import threading
import time

from absl import logging

from lib import models
from lib.backends.flax_backend import FlaxBackend
from lib.run.results import write_summary
from lib.serve import OpenAIServer, ServerLimits


def build_backend(config, workdir) -> FlaxBackend:
  """The served model of `config.model` (lib/models/model_setup.py) at its dtype; the embedded
  default is also saved (weights, config.json, tokenizer) to <workdir>/tiny_model, a folder that
  `model.checkpoint` reloads or serves elsewhere as it is."""
  path = os.path.join(workdir, "tiny_model")
  backend = FlaxBackend.from_block(config.model, tokenizer_dir=path, seed=config.seed,
                                   max_batch=config.max_batch, min_batch=config.min_batch,
                                   model_name=config.model_name)
  if not config.model.checkpoint:
    models.save_pretrained(backend.model, backend.model.config, path, tokenizer=backend.tokenizer)
  return backend


def _write_atomic(path: str, payload: dict) -> None:
  tmp = path + ".tmp"
  with open(tmp, "w", encoding="utf-8") as f:
    json.dump(payload, f)
  os.replace(tmp, path)


def server_limits(config) -> ServerLimits:
  """configs/serve.py's `limits` block (+ `max_batch`) as ServerLimits; context_length 0 means
  the model's own."""
  limits = config.limits.to_dict()
  limits["context_length"] = limits.get("context_length") or None
  return ServerLimits(max_batch=config.max_batch, **limits)


def run(config, workdir):
  backend = build_backend(config, workdir)
  server = OpenAIServer(backend, config.model_name, host=config.host, port=config.port,
                        limits=server_limits(config), batch_window_s=config.batch_window_s,
                        api_key_env=config.api_key_env, chunk_size=config.chunk_size,
                        weight_updates=config.weight_updates).start()
  info = {"url": server.url, "host": server.host, "port": server.port,
          "model": config.model_name, "pid": os.getpid()}
  _write_atomic(os.path.join(workdir, "server.json"), info)
  print(f"[serve] {config.model_name} at {server.url}", flush=True)

  # SIGTERM/SIGINT only set a flag: the main thread then stops the server in order (no new
  # connections, queued requests 503, the running batch drained or cancelled at its next chunk)
  # and returns normally, so the process exits 0 instead of dying inside a model call.
  stopping = threading.Event()
  for sig in (signal.SIGTERM, signal.SIGINT):
    signal.signal(sig, lambda signum, frame: stopping.set())
  start = time.time()
  while not stopping.wait(0.2):
    if config.duration_s and time.time() - start >= config.duration_s:
      break
  logging.info("serve: stopping (%s)", "signal" if stopping.is_set() else "duration reached")
  server.shutdown(drain_s=config.drain_s)
  usage = backend.usage.snapshot()
  summary = {**info, "served_s": time.time() - start, "batches": len(server.batches),
             "mean_batch": (sum(server.batches) / len(server.batches)) if server.batches else 0.0,
             **{k: v for k, v in usage.items() if k != "errors"}}
  write_summary(workdir, summary, [summary], title="OpenAI-compatible server")
  return summary
