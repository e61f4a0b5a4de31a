"""Rollouts from a served policy: the host loop's model calls go over HTTP to an OpenAI-compatible
server that returns token ids, and the trainer pushes its weights to that server between
iterations (issue #45's served path beside `lib.hostloop.rollouts.PolicyBackend`).

    with served_policy(ServedConfig.from_config(config.served), model, tok, turn_tokens=24) as sp:
      loop = HostLoop(sp.backend, ...)
      sp.sync(trainer.state.params, int(trainer.state.step))    # before each iteration
      metrics = rollouts.train_iteration(trainer, loop, jobs, ...)

Token-in/token-out: `ServedBackend` asks every request for `logprobs` and `return_token_ids`
(vLLM's field, served by Accord's server too) and answers with a `TokenCompletion` of the prompt
ids the server rendered, the sampled ids and their log-probs, which the host loop writes into the
transcript exactly as for `PolicyBackend`; the update consumes those ids, never a retokenization.

The weight-push contract (`ServedConfig.push`):
  "params"  Accord's server in this process (`url` ""): `OpenAIServer.load_params(params)`, the
            trainer's params written into the served model between batches (no file, no compile).
  "disk"    an external Accord server started with `weight_updates=True`: the params are saved as
            a checkpoint (`save_pretrained`) under `push_dir/step<k>` and the server is told
            `POST /update_weights_from_disk {"model_path": ...}` (SGLang's route name); `push_dir`
            must be a path the server can read.
  "none"    no push: the server keeps its weights (off-policy rollouts; vLLM's OpenAI server has
            no weight-update route, so this is the only mode it supports: restart it on a new
            checkpoint to move it).
A push happens once per trainer step (`sync` skips a step it already pushed), before the
iteration's rollouts and before an evaluation.
"""
import contextlib
import dataclasses
import json
import os
import urllib.error
import urllib.request
from typing import Any, Callable, ClassVar, Iterator

from flax import nnx

from lib.backends.flax_backend import FlaxBackend
from lib.backends.openai_http import OpenAIBackend
from lib.models import pretrained
from lib.run.config_blocks import ConfigBlock
from lib.serve.admission import ServerLimits
from lib.serve.httpd import OpenAIServer

PUSHES = ("auto", "params", "disk", "none")


@dataclasses.dataclass(frozen=True)
class ServedConfig(ConfigBlock):
  """The `served` block (rollout_backend="served").

  url: the server's OpenAI base URL (".../v1"); "" starts Accord's server in this process on a
    free loopback port for the run.
  model: the model id the requests name.
  push: "auto" ("params" in process, "disk" with a url), "params", "disk" or "none" (module
    docstring).
  push_dir: where "disk" writes its checkpoints (readable by the server).
  max_concurrency: requests in flight (one host-loop batch is sent as concurrent requests).
  timeout_s: per request.
  """
  block_name: ClassVar[str] = "served"
  url: str = ""
  model: str = "accord"
  push: str = "auto"
  push_dir: str = ""
  max_concurrency: int = 32
  timeout_s: float = 300.0

  def __post_init__(self):
    if self.push not in PUSHES:
      raise ValueError(f"served.push={self.push!r}; valid: {', '.join(PUSHES)}")
    if self.push == "params" and self.url:
      raise ValueError("served.push='params' needs the in-process server (served.url '')")
    if self.resolved_push() == "disk" and not self.push_dir:
      raise ValueError("served.push='disk' needs served.push_dir (a directory the server reads)")

  def resolved_push(self) -> str:
    """The push mode "auto" stands for here."""
    if self.push != "auto":
      return self.push
    return "disk" if self.url else "params"


class ServedBackend(OpenAIBackend):
  """`OpenAIBackend(token_ids=True)` with every reply capped at `turn_tokens` (the width of a
  training row), as `PolicyBackend` caps it."""

  name = "served"

  def __init__(self, base_url: str, model: str, *, turn_tokens: int, **kw):
    super().__init__(base_url, model, token_ids=True, **kw)
    self.turn_tokens = turn_tokens

  def _generate(self, conversations, params):
    return super()._generate(conversations, [p.replace(max_tokens=min(p.max_tokens,
                                                                      self.turn_tokens))
                                             for p in params])


def push_from_disk(base_url: str, model_path: str, timeout_s: float = 600.0) -> dict:
  """Tells a server at `base_url` (".../v1" or its root) to load the checkpoint `model_path`.

  Returns:
    The server's answer ({"success", "message", "version"} from Accord's server).
  Raises:
    RuntimeError: one line naming the server and why (no such route: vLLM's OpenAI server, or an
      Accord server without weight_updates; or the server's error).
  """
  root = base_url.rstrip("/").removesuffix("/v1")
  req = urllib.request.Request(f"{root}/update_weights_from_disk",
                               data=json.dumps({"model_path": model_path}).encode(),
                               headers={"Content-Type": "application/json"})
  try:
    with urllib.request.urlopen(req, timeout=timeout_s) as r:
      return json.loads(r.read())
  except urllib.error.HTTPError as e:
    detail = e.read().decode("utf-8", "replace")[:300]
    if e.code in (404, 405):
      raise RuntimeError(f"{root} has no POST /update_weights_from_disk (vLLM's OpenAI server has "
                         "none; start Accord's server with weight_updates=True, or set "
                         "served.push='none')") from None
    raise RuntimeError(f"{root}/update_weights_from_disk answered {e.code}: {detail}") from None


@dataclasses.dataclass
class ServedPolicy:
  """A served policy for the host loop: `backend` (a ServedBackend), `push(params, step)` the
  weight push of the config (None for "none"), `server` the in-process server (or None)."""
  backend: ServedBackend
  push: Callable[[Any, int], None] | None
  server: OpenAIServer | None = None
  pushed_step: int | None = None

  def sync(self, params, step: int) -> bool:
    """Pushes `params` unless `step` was pushed already; returns whether it pushed."""
    if self.push is None or step == self.pushed_step:
      return False
    self.push(params, step)
    self.pushed_step = step
    return True


@contextlib.contextmanager
def served_policy(cfg: ServedConfig, model: nnx.Module, tokenizer, *, turn_tokens: int,
                  seed: int = 0, max_batch: int = 64) -> Iterator[ServedPolicy]:
  """The served policy of `cfg`: Accord's server in this process over `model` (its weights are
  replaced by each push) when `cfg.url` is "", else a client of `cfg.url`.

  Args:
    cfg: the served block.
    model: the policy's NNX model (a clone of it is served in process; its graph and config
      shape the "disk" pushes' checkpoints).
    tokenizer: its tokenizer.
    turn_tokens: cap on one reply's tokens.
    seed: the in-process server's sampling seed.
    max_batch: rows per sampler call of the in-process server.
  Yields:
    The ServedPolicy; the in-process server and the client are closed on exit.
  """
  push_mode, server = cfg.resolved_push(), None
  url = cfg.url
  if not url:
    # a clone: pushes write into the served copy, never into the trainer's model, whose state
    # the trainer's initial (reference) params are views of
    server = OpenAIServer(FlaxBackend(nnx.clone(model), tokenizer, seed=seed,
                                      max_batch=max_batch),
                          cfg.model, limits=ServerLimits(max_new_tokens=max(turn_tokens, 16),
                                                         max_batch=max_batch),
                          weight_updates=push_mode == "disk").start()
    url = server.url
  graphdef, _, rest = nnx.split(model, nnx.Param, ...)

  def disk(params, step: int) -> None:
    path = os.path.join(cfg.push_dir, f"step{step}")
    merged = nnx.merge(graphdef, params, rest)
    pretrained.save_pretrained(merged, merged.config, path)
    push_from_disk(url, os.path.abspath(path), cfg.timeout_s)

  pushes = {"params": lambda params, step: server.load_params(params), "disk": disk,
            "none": None}
  backend = ServedBackend(url, cfg.model, turn_tokens=turn_tokens,
                          max_concurrency=cfg.max_concurrency, timeout_s=cfg.timeout_s,
                          max_retries=1, seed=seed)
  try:
    yield ServedPolicy(backend, pushes[push_mode], server)
  finally:
    backend.close()
    if server is not None:
      server.shutdown()
