"""What the server's model worker runs: a batch of validated requests -> one answer each.

`FlaxEngine` drives our sampler directly (`lib.generate.sampling.generate` in chunks): the `n`
choices of a request are rows of one batch, every row has its own PRNG key (from the request's
`seed`, so a seeded request gives the same sample whatever shares its batch) and its own token
budget, and between decode chunks the engine stops rows whose request was cancelled, whose deadline
passed or whose budget is spent. Log-probs and top log-probs come from the sampler. A request with a
regex (structured output, a forced tool call) has it compiled into a token DFA
(`compile_constraint`); the rows of one batch share one stacked table
(`lib.generate.token_dfa.stack`), unconstrained rows in its FREE state, and the sampler masks every
draw on device.

`BackendEngine` (backend_engine.py) serves any other `Backend`.

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

from lib.backends.flax_backend import FlaxBackend
from lib.backends.protocol import Completion, Usage
from lib.generate import sampling, token_dfa
from lib.serve import tool_calls
from lib.serve.admission import MAX_TOP_LOGPROBS, GenerationRequest, RequestError


class Cancelled(Exception):
  """The request was dropped before it finished (client gone, deadline passed, shutdown)."""


@dataclasses.dataclass
class Choice:
  """One sampled continuation. logprobs: per token (None unless asked); top_logprobs: per token,
  the (token id, log-prob) alternatives, most likely first. The prompt_* fields are set for
  echo (prompt_text; with logprobs also its tokens' log-probs, None for the first token, which
  has no context) and for return_token_ids (prompt_token_ids)."""
  text: str
  finish_reason: str
  token_ids: list[int]
  logprobs: list[float] | None = None
  top_logprobs: list[list[tuple[int, float]]] | None = None
  prompt_text: str | None = None
  prompt_token_ids: list[int] | None = None
  prompt_logprobs: list[float | None] | None = None
  prompt_top_logprobs: list[list[tuple[int, float]] | None] | None = None


@dataclasses.dataclass
class Generation:
  """One request's answer: its n choices and token counts (None when the backend cannot count)."""
  choices: list[Choice]
  prompt_tokens: int | None
  completion_tokens: int | None

  @classmethod
  def merge(cls, parts: list["Generation"]) -> "Generation":
    """One answer for a request of several prompts: their choices in prompt order, token counts
    added (None if any part has none).

    Args:
      parts: one Generation per prompt.
    Returns:
      The merged Generation.
    """
    add = lambda xs: None if any(x is None for x in xs) else sum(xs)
    return cls([c for g in parts for c in g.choices], add([g.prompt_tokens for g in parts]),
               add([g.completion_tokens for g in parts]))


# stop_rows() -> [bool] per request of the batch: stop it now. progress(): the worker is alive.
StopRows = Callable[[], list[bool]]


class Engine(Protocol):
  """The model side of the server (see the module docstring)."""
  usage: Usage
  context_length: int | None
  supports_logprobs: bool
  supports_completions: bool

  def compile_constraint(self, request: GenerationRequest) -> None:
    """Must set request.constraint from request.regex, or raise RequestError 400 naming
    request.regex_field. Args: request: a parsed request with a regex."""

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

  def __init__(self, backend: FlaxBackend, chunk_size: int = 16, max_batch: int = 32,
               max_constraint_cells: int = token_dfa.MAX_CELLS):
    self.backend, self.tokenizer = backend, backend.tokenizer
    self.usage = backend.usage
    self.chunk_size, self.max_batch = chunk_size, max_batch
    self.context_length = int(backend.model.config.max_position_embeddings)
    self.eos_ids = sampling.default_eos_ids(self.tokenizer, backend.model.config)
    self.pad_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
    self._seeded = jax.random.fold_in(jax.random.key(backend.seed), 0)
    self._fresh = jax.random.fold_in(jax.random.key(backend.seed), 1)
    self._counter = itertools.count()
    self.max_constraint_cells = max_constraint_cells

  def compile_constraint(self, request: GenerationRequest) -> None:
    """Compiles request.regex into request.constraint (cached per regex).
    Args: request: a parsed request with a regex (RequestError 400 if it cannot compile)."""
    try:
      request.constraint = token_dfa.compile_regex(self.tokenizer, request.regex, self.eos_ids,
                                                   self.max_constraint_cells)
    except token_dfa.ConstraintError as e:
      raise RequestError(400, f"{request.regex_field}: {e}", param=request.regex_field) from None

  def prompt_ids(self, request: GenerationRequest) -> list[int]:
    """Token ids of the request's prompt (chat: rendered with the generation prompt); raises
    RequestError 400 if it encodes to zero tokens. Args: request: a parsed GenerationRequest."""
    if request.prompt_ids is not None:  # given as token ids
      vocab = self.backend.model.config.vocab_size
      if max(request.prompt_ids) >= vocab:
        raise RequestError(400, f"prompt token id {max(request.prompt_ids)} is outside the "
                                f"vocabulary (size {vocab})", param="prompt")
      return list(request.prompt_ids)
    text = request.prompt
    if request.kind != "completion":  # chat and /v1/responses: a conversation
      text = tool_calls.chat_text(self.tokenizer, request.prompt, request.tools,
                                  self.backend.template_kwargs)
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
    out: list = [None] * len(requests)
    for i, r in enumerate(requests):
      if r.score_only:  # echo with max_tokens=0: only the prompt is scored, below
        out[i] = Generation([Choice("", "length", [], [] if r.logprobs else None,
                                    [] if r.logprobs else None) for _ in range(r.n)],
                            len(r.prompt_ids), 0)
        continue
      p = r.params
      groups.setdefault((p.temperature, p.top_p, p.top_k, bool(r.top_logprobs)), []).append(i)
    for idx in groups.values():
      for batch in _pack(idx, [requests[i].n for i in idx], self.max_batch):
        sub = [requests[i] for i in batch]
        sub_stop = lambda batch=batch: [stop_rows()[i] for i in batch]
        run = lambda pick, sub=sub, sub_stop=sub_stop: self._run(
            [sub[k] for k in pick], lambda: [sub_stop()[k] for k in pick], progress)
        for i, result in zip(batch, generate_isolated(run, sub, sub_stop)):
          out[i] = result
    self._add_prompts(requests, out, progress)
    return out

  def _add_prompts(self, requests, out, progress) -> None:
    """Echo: the prompt's text (and, with logprobs, its tokens' log-probs from one batched
    teacher-forced forward, `FlaxBackend.score`) on every choice; return_token_ids: the
    prompt's ids. A scoring failure fails the echo requests alone."""
    answered = [i for i, r in enumerate(requests)
                if isinstance(out[i], Generation) and (r.echo or r.return_token_ids)]
    scored = [i for i in answered if requests[i].echo and requests[i].logprobs]
    scores = {}
    if scored:
      progress()
      try:
        top = max(requests[i].top_logprobs for i in scored)
        scores = dict(zip(scored, self.backend.score([requests[i].prompt_ids for i in scored],
                                                     top)))
      except Exception as e:  # pylint: disable=broad-except
        for i in scored:
          out[i] = e
    for i in answered:
      r = requests[i]
      if not isinstance(out[i], Generation):
        continue
      for c in out[i].choices:
        c.prompt_token_ids = list(r.prompt_ids)
        if r.echo:
          c.prompt_text = r.prompt if isinstance(r.prompt, str) else \
              self.tokenizer.decode(r.prompt_ids)
        if i in scores:
          k, sc = r.top_logprobs, scores[i]
          c.prompt_logprobs = sc["logprobs"]
          c.prompt_top_logprobs = [None] + [list(zip(ids[:k], lps[:k])) for ids, lps in
                                            zip(sc["top_ids"][1:], sc["top_logprobs"][1:])]

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
        if r.tools is not None and r.tools.parses:  # content only; tool calls come at the end
          text = tool_calls.streamable(text)
        if r.on_text is not None and len(text) > streamed[row]:
          r.on_text(choice_index[row], text[streamed[row]:])
          streamed[row] = len(text)
      return stop

    p = requests[0].params
    # top_k >= vocabulary filters nothing; mapping it to 0 spares a compile per such value.
    top_k = p.top_k if p.top_k < self.backend.model.config.vocab_size else 0
    ids, mask = sampling.left_pad(rows, self.pad_id)
    constraint = None
    if any(r.constraint is not None for r in requests):  # padding rows stay FREE
      constraint = token_dfa.constraint([requests[o].constraint for o in owners] +
                                        [None] * (padded - real),
                                        self.backend.model.config.vocab_size)
    out = sampling.generate(
        *nnx.split(self.backend.model), ids, mask,
        jax.random.wrap_key_data(jnp.stack(keys)),
        max_new_tokens=sampling.bucket_length(max(budgets), minimum=16),
        temperature=p.temperature, top_p=p.top_p, top_k=top_k, eos_ids=self.eos_ids,
        pad_id=self.pad_id, top_logprobs=_sampling_top(requests), chunk_size=self.chunk_size,
        on_chunk=on_chunk, constraint=constraint)
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
