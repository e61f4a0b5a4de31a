"""The one interface every model backend implements: chat conversations in, completions out.

  backend.generate(conversations, params) -> list[Completion]   (one per conversation, same order)
  backend.embed(texts) -> np.ndarray [N, D] float32, L2-normalised  (where supported)
  backend.usage -> Usage                                          (calls, tokens, latency, errors)

A conversation is a list of OpenAI-style messages `{"role": "system"|"user"|"assistant",
"content": str}`. `params` is one `SamplingParams` for the whole batch or a list with one per
conversation (e.g. a planner and an actor with different token limits in one batch; a per-request
`seed` so a rollout's samples do not depend on which other episodes share its batch).

`generate` never raises for a failed model call: the failed conversation comes back as a
`Completion` whose `error` holds a short code (`http_429`, `connection`, `timeout`, ...), so an
episode loop can record it and go on. Programming errors (wrong argument types) still raise.
"""
import dataclasses
import threading
import time
from typing import Sequence

import numpy as np

Message = dict  # {"role": str, "content": str}
Conversation = list  # list[Message]

ROLES = ("system", "user", "assistant", "tool")


@dataclasses.dataclass(frozen=True)
class SamplingParams:
  """Decoding settings (OpenAI chat-completions names). temperature 0 means greedy."""
  max_tokens: int = 256
  temperature: float = 0.0
  top_p: float = 1.0
  top_k: int = 0  # 0: off (not part of the OpenAI API; sent only to servers that accept it)
  stop: tuple[str, ...] = ()
  seed: int | None = None
  # The whole output must match this regex (structured output): enforced by the flax backend's
  # sampler and sent to OpenAI-compatible servers as structured_outputs.regex (vLLM, ours).
  regex: str | None = None

  def __post_init__(self):
    if self.max_tokens < 1:
      raise ValueError(f"max_tokens must be >= 1, got {self.max_tokens}")
    if self.temperature < 0:
      raise ValueError(f"temperature must be >= 0, got {self.temperature}")
    if not 0 < self.top_p <= 1:
      raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
    if isinstance(self.stop, str):
      object.__setattr__(self, "stop", (self.stop,))
    else:
      object.__setattr__(self, "stop", tuple(self.stop))

  def replace(self, **changes) -> "SamplingParams":
    """A copy with `changes` (field name -> value) applied and validated again."""
    return dataclasses.replace(self, **changes)

  def without_seed(self) -> "SamplingParams":
    """The batching key: requests that differ only in seed can share one sampler call."""
    return dataclasses.replace(self, seed=None)


@dataclasses.dataclass
class Completion:
  """One model reply. Token counts are None when the backend cannot report them.

  error: None on success, else a short machine-readable code; `error_detail` is a human-readable
  line (never contains credentials). attempts: HTTP tries spent (1 without retries).
  """
  text: str = ""
  input_tokens: int | None = None
  output_tokens: int | None = None
  latency_s: float = 0.0
  finish_reason: str | None = None
  error: str | None = None
  error_detail: str = ""
  attempts: int = 1

  @property
  def ok(self) -> bool:
    """True when the call succeeded (`error` is None)."""
    return self.error is None

  def to_json(self) -> dict:
    """All fields as a JSON-serialisable dict."""
    return dataclasses.asdict(self)


@dataclasses.dataclass
class TokenCompletion(Completion):
  """A Completion with its tokens (token-in/token-out backends: `lib.hostloop.rollouts`'s
  PolicyBackend, `OpenAIBackend(token_ids=True)`): prompt_ids as the sampler saw them, token_ids
  the kept response ids (EOS included when it ended the reply), logprobs their sampling
  log-probs."""
  prompt_ids: list = dataclasses.field(default_factory=list)
  token_ids: list = dataclasses.field(default_factory=list)
  logprobs: list = dataclasses.field(default_factory=list)


def failed(code: str, detail: str = "", latency_s: float = 0.0, attempts: int = 1) -> Completion:
  """A failed Completion (empty text, no token counts).

  Args:
    code: short machine-readable error code, e.g. "timeout".
    detail: human-readable line, without credentials.
    latency_s: seconds spent on the call.
    attempts: tries spent.
  Returns:
    Completion with `error=code`.
  """
  return Completion(error=code, error_detail=detail, latency_s=latency_s, attempts=attempts)


class Usage:
  """Thread-safe running totals over every completion a backend returned.

  `calls` counts conversations answered (successful or not); `batches` counts `generate` calls;
  token totals only include completions that reported them, and `with_usage` says how many did
  (usage coverage = with_usage / ok_calls).
  """

  FIELDS = ("batches", "calls", "ok_calls", "failed_calls", "with_usage", "input_tokens",
            "output_tokens", "latency_s", "attempts", "embed_calls", "embed_texts")

  def __init__(self):
    self._lock = threading.Lock()
    self._totals = {f: 0 for f in self.FIELDS}
    self._totals["latency_s"] = 0.0
    self._errors: dict[str, int] = {}

  def record_batch(self, completions: Sequence[Completion]) -> None:
    """Adds one `generate` batch to the totals.

    Args:
      completions: the batch's completions, successful and failed.
    """
    with self._lock:
      t = self._totals
      t["batches"] += 1
      for c in completions:
        t["calls"] += 1
        t["latency_s"] += c.latency_s
        t["attempts"] += c.attempts
        if c.error is not None:
          t["failed_calls"] += 1
          self._errors[c.error] = self._errors.get(c.error, 0) + 1
          continue
        t["ok_calls"] += 1
        if c.input_tokens is not None and c.output_tokens is not None:
          t["with_usage"] += 1
          t["input_tokens"] += c.input_tokens
          t["output_tokens"] += c.output_tokens

  def record_embed(self, n_texts: int) -> None:
    """Counts one `embed` call.

    Args:
      n_texts: number of texts it embedded.
    """
    with self._lock:
      self._totals["embed_calls"] += 1
      self._totals["embed_texts"] += n_texts

  def snapshot(self) -> dict:
    """A copy of the totals plus `errors` (code -> count) and `usage_coverage` (with_usage /
    ok_calls; NaN when no call succeeded)."""
    with self._lock:
      out = dict(self._totals)
      out["errors"] = dict(self._errors)
    out["usage_coverage"] = out["with_usage"] / out["ok_calls"] if out["ok_calls"] else float("nan")
    return out


class BackendUnavailable(RuntimeError):
  """A backend's optional dependency or hardware is missing (e.g. vLLM without a GPU)."""


class Backend:
  """Base class: subclasses implement `_generate` (and `_embed` if they can embed).

  The public methods validate inputs, time the batch, fill in latency where the subclass did not,
  turn an unexpected exception inside `_generate` into failed completions for the whole batch
  (code `backend_exception`), and record usage.
  """

  name = "backend"

  def __init__(self):
    self.usage = Usage()

  def generate(self, conversations: Sequence[Conversation],
               params: SamplingParams | Sequence[SamplingParams] = SamplingParams()
               ) -> list[Completion]:
    """Answers every conversation; a failed model call comes back as a failed Completion.

    Args:
      conversations: N conversations, each a non-empty list of {"role", "content"} messages.
      params: one SamplingParams for all conversations, or a sequence of N.
    Returns:
      N Completions in input order.
    Raises TypeError/ValueError on malformed input, BackendUnavailable when the backend cannot
    run, RuntimeError when the subclass returns the wrong number of completions.
    """
    conversations = [validate_conversation(c) for c in conversations]
    per_request = broadcast_params(params, len(conversations))
    if not conversations:
      return []
    start = time.perf_counter()
    try:
      out = list(self._generate(conversations, per_request))
    except BackendUnavailable:
      raise
    except Exception as e:  # pylint: disable=broad-except
      # A bug or outage inside one backend must not take down a 1600-episode run; the episodes
      # that asked are ended with a recorded code instead.
      elapsed = time.perf_counter() - start
      out = [failed("backend_exception", f"{type(e).__name__}: {e}", elapsed)
             for _ in conversations]
    if len(out) != len(conversations):
      raise RuntimeError(f"{self.name} returned {len(out)} completions for "
                         f"{len(conversations)} conversations")
    self.usage.record_batch(out)
    return out

  def embed(self, texts: Sequence[str]) -> np.ndarray:
    """Embeds texts with the subclass's `_embed`.

    Args:
      texts: N strings.
    Returns:
      [N, D] float32 embeddings as the subclass returns them (the vLLM and Flax backends
      L2-normalise rows; an HTTP server's vectors pass through).
    Raises TypeError for non-strings, NotImplementedError when the backend cannot embed.
    """
    texts = list(texts)
    if not all(isinstance(t, str) for t in texts):
      raise TypeError("embed() takes a list of strings")
    out = np.asarray(self._embed(texts), dtype=np.float32)
    self.usage.record_embed(len(texts))
    return out

  def _generate(self, conversations: list[Conversation],
                params: list[SamplingParams]) -> list[Completion]:
    raise NotImplementedError

  def _embed(self, texts: list[str]) -> np.ndarray:
    raise NotImplementedError(f"{self.name} backend does not support embeddings")

  def close(self) -> None:
    """Releases threads/sessions; the default has nothing to release."""


def broadcast_params(params, n: int) -> list[SamplingParams]:
  """One SamplingParams per conversation.

  Args:
    params: a SamplingParams (repeated n times) or a sequence of exactly n of them.
    n: number of conversations.
  Returns:
    list of n SamplingParams. Raises ValueError on a wrong count, TypeError on a wrong type.
  """
  if isinstance(params, SamplingParams):
    return [params] * n
  params = list(params)
  if len(params) != n:
    raise ValueError(f"got {len(params)} SamplingParams for {n} conversations")
  if not all(isinstance(p, SamplingParams) for p in params):
    raise TypeError("params must be SamplingParams or a list of them")
  return params


def validate_conversation(conv) -> Conversation:
  """Checks one conversation's shape; returns it as a list of {"role", "content"} dicts.

  Args:
    conv: a non-empty sequence of dicts, each with a `role` in ROLES and a str `content`.
  Returns:
    a new list of {"role", "content"} dicts (other keys dropped).
  Raises TypeError on a wrong type or missing key, ValueError on an unknown role.
  """
  if isinstance(conv, (str, bytes)) or not isinstance(conv, Sequence) or not conv:
    raise TypeError(f"a conversation is a non-empty list of messages, got {type(conv).__name__}")
  out = []
  for i, m in enumerate(conv):
    if not isinstance(m, dict) or "role" not in m or "content" not in m:
      raise TypeError(f"message {i} must be a dict with 'role' and 'content', got {m!r:.80}")
    if m["role"] not in ROLES:
      raise ValueError(f"message {i} has unknown role {m['role']!r}; valid: {ROLES}")
    if not isinstance(m["content"], str):
      raise TypeError(f"message {i} content must be str, got {type(m['content']).__name__}")
    out.append({"role": m["role"], "content": m["content"]})
  return out
