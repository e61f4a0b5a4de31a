"""What the server's model worker runs: a batch of validated requests -> one answer each.

`FlaxEngine` drives our sampler directly (`lib.sampling.generate` in chunks): the `n` choices of
a request are rows of one batch, every row has its own PRNG key (from the request's `seed`, so a
seeded request gives the same sample whatever shares its batch) and its own token budget, and
between decode chunks the engine stops rows whose request was cancelled, whose deadline passed or
whose budget is spent. Log-probs and top log-probs come from the sampler.

`BackendEngine` serves any other `Backend` (scripted policies, a remote API) through
`backend.generate`: chat only, no log-probs, no cancellation inside a batch.

A failure in a batch is retried request by request, so one bad request fails alone.
"""
import dataclasses
import itertools
import time
from typing import Callable, Protocol

import jax
import jax.numpy as jnp
import numpy as np
from absl import logging
from flax import nnx

from lib import sampling
from lib.llm.backend import Backend, Completion, Usage
from lib.llm.flax_backend import FlaxBackend
from lib.llm.server.admission import MAX_TOP_LOGPROBS, GenerationRequest, RequestError


class Cancelled(Exception):
  """The request was dropped before it finished (client gone, deadline passed, shutdown)."""


@dataclasses.dataclass
class Choice:
  """One sampled continuation. logprobs: per token (None unless asked); top_logprobs: per token,
  the (token id, log-prob) alternatives, most likely first."""
  text: str
  finish_reason: str
  token_ids: list[int]
  logprobs: list[float] | None = None
  top_logprobs: list[list[tuple[int, float]]] | None = None


@dataclasses.dataclass
class Generation:
  """One request's answer: its n choices and token counts (None when the backend cannot count)."""
  choices: list[Choice]
  prompt_tokens: int | None
  completion_tokens: int | None


# stop_rows() -> [bool] per request of the batch: stop it now. progress(): the worker is alive.
StopRows = Callable[[], list[bool]]


class Engine(Protocol):
  """The model side of the server (see the module docstring)."""
  usage: Usage
  context_length: int | None
  supports_logprobs: bool
  supports_completions: bool

  def prompt_ids(self, request: GenerationRequest) -> list[int] | None:
    """Must return the request's prompt token ids (chat: templated), or None if not tokenized.

    Args:
      request: a parsed GenerationRequest (chat: a conversation; completion: a string).
    """

  def generate(self, requests: list[GenerationRequest], stop_rows: StopRows,
               progress: Callable[[], None]) -> list["Generation | Exception"]:
    """Must answer each request: a Generation, Cancelled, or the Exception that failed it alone.

    Args:
      requests: admitted GenerationRequests.
      stop_rows: () -> per request, whether to drop it now.
      progress: to be called regularly while working (the worker's heartbeat).
    Returns:
      One Generation or Exception per request, in order.
    """

  def embed(self, texts: list[str]) -> np.ndarray:
    """Must return float32 embeddings [len(texts), D] of `texts`.

    Args:
      texts: the input strings.
    """

  def count_tokens(self, texts: list[str]) -> int | None:
    """Must return the total token count of `texts`, or None if it cannot count.

    Args:
      texts: the input strings.
    """

  def token_text(self, token_id: int) -> str:
    """Must return the text of one token id (for log-prob entries).

    Args:
      token_id: a vocabulary id.
    """


def generate_isolated(run_batch, requests: list, stop_rows: StopRows) -> list:
  """Runs a batch so that a request that fails takes only itself down.

  Args:
    run_batch: indices into `requests` -> one answer per index; may raise.
    requests: the batch.
    stop_rows: per request, whether it was cancelled (skipped when retried alone).
  Returns:
    One answer or Exception per request: run_batch over all of them, or, if that raised, over
    each request alone.
  """
  try:
    return run_batch(list(range(len(requests))))
  except Exception as e:  # pylint: disable=broad-except
    if len(requests) == 1:
      return [e]
    logging.warning("batch of %d failed (%s: %.200s); retrying each request alone",
                    len(requests), type(e).__name__, e)
  out = []
  for i in range(len(requests)):
    if stop_rows()[i]:
      out.append(Cancelled())
      continue
    try:
      out.extend(run_batch([i]))
    except Exception as e:  # pylint: disable=broad-except
      out.append(e)
  return out


class FlaxEngine:
  """Chunked, cancellable sampling over a `FlaxBackend`'s model and tokenizer."""

  supports_logprobs = True
  supports_completions = True

  def __init__(self, backend: FlaxBackend, chunk_size: int = 16, max_batch: int = 32):
    self.backend, self.tokenizer = backend, backend.tokenizer
    self.usage = backend.usage
    self.chunk_size, self.max_batch = chunk_size, max_batch
    self.context_length = int(backend.model.config.max_position_embeddings)
    self.eos_ids = sampling.default_eos_ids(self.tokenizer, backend.model.config)
    self.pad_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
    self._seeded = jax.random.fold_in(jax.random.key(backend.seed), 0)
    self._fresh = jax.random.fold_in(jax.random.key(backend.seed), 1)
    self._counter = itertools.count()

  def prompt_ids(self, request: GenerationRequest) -> list[int]:
    """Token ids of the request's prompt (chat: rendered with the generation prompt); raises
    RequestError 400 if it encodes to zero tokens. Args: request: a parsed GenerationRequest."""
    text = request.prompt
    if request.kind == "chat":
      text = self.tokenizer.apply_chat_template(request.prompt, tokenize=False,
                                                add_generation_prompt=True,
                                                **self.backend.template_kwargs)
    ids = self.tokenizer.encode(text, add_special_tokens=False)
    if not ids:
      raise RequestError(400, "the prompt encodes to zero tokens", param="prompt")
    return ids

  def token_text(self, token_id: int) -> str:
    """The decoded text of one token id.
    Args: token_id: a vocabulary id."""
    return self.tokenizer.decode([token_id])

  def count_tokens(self, texts: list[str]) -> int:
    """Total tokens of `texts` (no special tokens added).
    Args: texts: the input strings."""
    return self.backend.count_tokens(texts)

  def embed(self, texts: list[str]) -> np.ndarray:
    """The backend's float32 embeddings [len(texts), hidden_size], L2-normalised.
    Args: texts: the input strings."""
    return self.backend.embed(texts)

  def _key(self, request: GenerationRequest):
    if request.params.seed is not None:
      return jax.random.fold_in(self._seeded, request.params.seed % (1 << 32))
    return jax.random.fold_in(self._fresh, next(self._counter))

  def generate(self, requests, stop_rows, progress):
    """Answers admitted requests (prompt_ids set).

    Args:
      requests: GenerationRequests.
      stop_rows: () -> per request, whether to drop it now (checked between decode chunks).
      progress: called between decode chunks (the worker's heartbeat).
    Returns:
      Per request a Generation, Cancelled, or the Exception that failed it alone.
    """
    # Requests share a sampler call when their traced/static sampling settings agree.
    groups: dict[tuple, list[int]] = {}
    for i, r in enumerate(requests):
      p = r.params
      groups.setdefault((p.temperature, p.top_p, p.top_k, bool(r.top_logprobs)), []).append(i)
    out: list = [None] * len(requests)
    for idx in groups.values():
      for batch in _pack(idx, [requests[i].n for i in idx], self.max_batch):
        sub = [requests[i] for i in batch]
        sub_stop = lambda batch=batch: [stop_rows()[i] for i in batch]
        run = lambda pick, sub=sub, sub_stop=sub_stop: self._run(
            [sub[k] for k in pick], lambda: [sub_stop()[k] for k in pick], progress)
        for i, result in zip(batch, generate_isolated(run, sub, sub_stop)):
          out[i] = result
    return out

  def _partial_text(self, token_ids: list[int], stop: tuple[str, ...]) -> tuple[str, bool]:
    """Text of a row still being decoded -> (the part safe to stream, whether a stop string
    occurred). Held back: a final EOS, an incomplete UTF-8 character, and the last
    len(longest stop string) - 1 characters, which a stop string may still claim."""
    if token_ids and token_ids[-1] in self.eos_ids:
      token_ids = token_ids[:-1]
    text = self.tokenizer.decode(token_ids)
    hits = [text.find(s) for s in stop if s in text]
    if hits:
      return text[:min(hits)], True
    hold = max((len(s) for s in stop), default=1) - 1
    return text[:len(text) - hold].rstrip("\ufffd"), False

  def _run(self, requests: list[GenerationRequest], stop_rows: StopRows, progress):
    start = time.perf_counter()
    rows, budgets, owners, keys = [], [], [], []
    for i, r in enumerate(requests):
      for key in jax.random.split(self._key(r), r.n):
        rows.append(r.prompt_ids)
        budgets.append(r.params.max_tokens)
        owners.append(i)
        keys.append(jax.random.key_data(key))
    real = len(rows)
    padded = sampling.bucket_length(real, minimum=self.backend.min_batch)
    rows += [rows[0]] * (padded - real)
    budgets += [0] * (padded - real)  # padding rows are stopped at the first chunk boundary
    keys += [keys[0]] * (padded - real)
    budgets_arr = np.asarray(budgets)

    owner = np.asarray(owners + [len(requests)] * (padded - real))
    choice_index = [owners[:row].count(owners[row]) for row in range(real)]
    streamed = [0] * real  # characters of each row already handed to its request's on_text

    def on_chunk(lengths, done, tokens):
      progress()
      stop = (lengths >= budgets_arr) | np.asarray(stop_rows() + [True], bool)[owner]
      for row in range(real):
        r = requests[owners[row]]
        if stop[row] or (r.on_text is None and not r.params.stop):
          continue
        n = min(int(lengths[row]), budgets[row])
        text, hit = self._partial_text(tokens[row, :n].tolist(), r.params.stop)
        stop[row] |= hit  # a stop string ends the row now, not at its token budget
        if r.on_text is not None and len(text) > streamed[row]:
          r.on_text(choice_index[row], text[streamed[row]:])
          streamed[row] = len(text)
      return stop

    p = requests[0].params
    # top_k >= vocabulary filters nothing; mapping it to 0 spares a compile per such value.
    top_k = p.top_k if p.top_k < self.backend.model.config.vocab_size else 0
    ids, mask = sampling.left_pad(rows, self.pad_id)
    out = sampling.generate(
        *nnx.split(self.backend.model), ids, mask,
        jax.random.wrap_key_data(jnp.stack(keys)),
        max_new_tokens=sampling.bucket_length(max(budgets), minimum=16),
        temperature=p.temperature, top_p=p.top_p, top_k=top_k, eos_ids=self.eos_ids,
        pad_id=self.pad_id, top_logprobs=_sampling_top(requests), chunk_size=self.chunk_size,
        on_chunk=on_chunk)
    tokens, logprobs, lengths, top_ids, top_lps = jax.device_get(tuple(out))
    stopped = stop_rows()
    answers = [Generation([], len(r.prompt_ids), 0) for r in requests]
    for row in range(real):
      r = requests[owners[row]]
      n = min(int(lengths[row]), budgets[row])
      text, n, reason = sampling.finish_row(self.tokenizer, tokens[row, :n].tolist(),
                                            self.eos_ids, r.params.stop)
      choice = Choice(text, reason, tokens[row, :n].tolist())
      if r.logprobs:
        choice.logprobs = logprobs[row, :n].tolist()
        choice.top_logprobs = [list(zip(top_ids[row, t, :r.top_logprobs].tolist(),
                                        top_lps[row, t, :r.top_logprobs].tolist()))
                               for t in range(n)]
      answers[owners[row]].choices.append(choice)
      answers[owners[row]].completion_tokens += n
    latency = time.perf_counter() - start
    self.usage.record_batch([Completion(c.text, a.prompt_tokens, len(c.token_ids), latency,
                                        c.finish_reason)
                             for a, s in zip(answers, stopped) if not s for c in a.choices])
    return [Cancelled() if s else a for a, s in zip(answers, stopped)]


def _sampling_top(requests: list[GenerationRequest]) -> int:
  """Top log-probs the sampler keeps: 0, or the API's maximum (one compiled program for any K)."""
  return MAX_TOP_LOGPROBS if any(r.top_logprobs for r in requests) else 0


def _pack(indices: list[int], rows: list[int], max_rows: int) -> list[list[int]]:
  """Consecutive groups of indices whose row counts add up to at most max_rows."""
  batches, current, used = [], [], 0
  for i, n in zip(indices, rows):
    if current and used + n > max_rows:
      batches.append(current)
      current, used = [], 0
    current.append(i)
    used += n
  return batches + ([current] if current else [])


class BackendEngine:
  """Any `Backend` behind the server: chat completions and embeddings, no log-probs."""

  supports_logprobs = False
  supports_completions = False
  context_length = None

  def __init__(self, backend: Backend):
    self.backend, self.usage = backend, backend.usage

  def prompt_ids(self, request):
    """Always None: the backend tokenizes (if at all) on its side.
    Args: request: unused."""
    return None

  def token_text(self, token_id):
    """Not supported (no log-probs): raises NotImplementedError.
    Args: token_id: unused."""
    raise NotImplementedError

  def count_tokens(self, texts):
    """Always None: this engine cannot count tokens.
    Args: texts: unused."""
    return None

  def embed(self, texts):
    """The backend's embeddings [len(texts), D] float32 (raises where it has none).
    Args: texts: the input strings."""
    return self.backend.embed(texts)

  def generate(self, requests, stop_rows, progress):
    """Answers chat requests through `backend.generate`, n conversations per request.

    Args:
      requests: admitted chat GenerationRequests.
      stop_rows: () -> per request, whether it was cancelled (checked only on retries).
      progress: called once before the batch.
    Returns:
      Per request a Generation, Cancelled, or the Exception that failed it alone.
    """
    progress()

    def run(pick):
      convs, params, owners = [], [], []
      for i in pick:
        r = requests[i]
        for j in range(r.n):  # n choices: n conversations, seeds spread so they differ
          seed = None if r.params.seed is None else r.params.seed + j
          convs.append(r.prompt)
          params.append(r.params.replace(seed=seed) if r.n > 1 else r.params)
          owners.append(i)
      answers = {i: Generation([], 0, 0) for i in pick}
      for i, c in zip(owners, self.backend.generate(convs, params)):
        if not c.ok:
          raise RuntimeError(f"{c.error}: {c.error_detail}")
        a = answers[i]
        a.choices.append(Choice(c.text, c.finish_reason or "stop", []))
        a.prompt_tokens = c.input_tokens
        a.completion_tokens = (None if c.output_tokens is None or a.completion_tokens is None
                               else a.completion_tokens + c.output_tokens)
      return [answers[i] for i in pick]

    return generate_isolated(run, requests, stop_rows)


def make_engine(backend: Backend, chunk_size: int = 16, max_batch: int = 32) -> Engine:
  """The engine for `backend`.

  Args:
    backend: a FlaxBackend gets FlaxEngine (chunked, cancellable, log-probs); any other
      Backend gets BackendEngine.
    chunk_size: decode steps between cancellation checks (FlaxEngine).
    max_batch: rows per sampler call (FlaxEngine).
  Returns:
    An Engine.
  """
  if isinstance(backend, FlaxBackend):
    return FlaxEngine(backend, chunk_size=chunk_size, max_batch=max_batch)
  return BackendEngine(backend)

