"""Batched autoregressive sampling with a KV cache; the whole decode loop is one jitted program.

`generate` (arrays in, arrays out): left-padded prompts -> prefill -> `lax.while_loop` over new
tokens, stopping per sequence on EOS ids on device and leaving the loop once every row has stopped.
The model only needs `init_cache(batch, max_len)`, `extend(ids, mask, cache) -> (logits, cache)` and
`config` (lib/models/qwen/model.py); the prefill (in row chunks on request) and a weight copy in
another dtype to sample from are `lib/generate/prefill.py`. Other decoder families plug in as is.
Model weights enter as an argument (graphdef/state split), so one compiled program serves any
checkpoint of the same shape; the KV cache is donated (updated in place). The per-step token
choice (greedy or filtered sampling, the chosen token's log-prob) is `lib/generate/token_choice.py`.
Prompts are left-padded to a power-of-two length bucket, so the program compiles once per
(batch, bucket, max_new_tokens, top_k, eos ids).

`generate_text` (strings or chat messages in, `DecodedText`s out) wraps it with a tokenizer. Stop
strings are cut there, on the host, once per batch after decoding: right before the string in
`text` (as vLLM does), after the token that completed it in tokens and logprobs.
"""
import dataclasses
from typing import Callable, NamedTuple, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from lib.generate import token_dfa
from lib.generate.prefill import prefill, rollout_weights
from lib.generate.token_choice import chosen_logprob, sample_logits
from lib.parallel import sharding as sharding_lib


class SampleOutput(NamedTuple):
  """tokens [B,N] int32 (pad_id after a row stopped); logprobs [B,N] float32: log_softmax of the
  model's raw logits (temperature 1, unfiltered) at each token, 0 after a stop; lengths [B] int32:
  tokens generated, counting the EOS token that stopped the row; top_ids / top_logprobs [B,N,K]
  (K = `top_logprobs`, 0 when not asked): the K most likely tokens at each step and their
  log-probs (same distribution as `logprobs`)."""
  tokens: jax.Array
  logprobs: jax.Array
  lengths: jax.Array
  top_ids: jax.Array
  top_logprobs: jax.Array


class _Decode(NamedTuple):
  """The decode loop's carry; it lives on device between chunks (the cache is donated)."""
  step: jax.Array
  cache: object
  logits: jax.Array
  tokens: jax.Array
  logprobs: jax.Array
  top_ids: jax.Array
  top_logprobs: jax.Array
  lengths: jax.Array
  done: jax.Array
  dfa: jax.Array | None = None  # [B] DFA states under a constraint (lib/generate/token_dfa.py)


def bucket_length(n: int, minimum: int = 16) -> int:
  """Smallest power of two >= n, and at least `minimum` (sizes that share a compiled program).

  Args:
    n: a length or row count. minimum: the smallest value returned.
  """
  return max(minimum, 1 << max(0, int(n) - 1).bit_length())


def prompt_bucket(n: int, minimum: int = 16, step: int = 128) -> int:
  """The padded prompt length: a power of two up to `step` * 2, then the next multiple of `step`.

  Prefill attention grows with the square of the padded length, so a 263-token prompt padded to
  512 (the next power of two) costs 2.6x the same prompt padded to 320-384; the finer buckets
  above 256 add a few compiled programs, not one per length.

  Args:
    n: the longest prompt of the batch. minimum: the smallest length returned. step: the bucket
      width above 2 * step.
  """
  if n <= 2 * step:
    return bucket_length(n, minimum)
  return -(-int(n) // step) * step


def left_pad(token_lists: Sequence[Sequence[int]], pad_id: int = 0, length: int | None = None):
  """Token lists -> (ids [B,L] int32, mask [B,L] int32), real tokens flush right.

  Args:
    token_lists: B non-empty lists of ids. pad_id: id of the padding. length: L (default the
      longest list; shorter than it raises ValueError).
  """
  longest = max(len(t) for t in token_lists)
  if min(len(t) for t in token_lists) == 0:
    raise ValueError("every prompt needs at least one token")
  length = longest if length is None else length
  if length < longest:
    raise ValueError(f"pad length {length} is shorter than the longest prompt ({longest})")
  ids = np.full((len(token_lists), length), pad_id, np.int32)
  mask = np.zeros((len(token_lists), length), np.int32)
  for row, tokens in enumerate(token_lists):
    ids[row, length - len(tokens):] = tokens
    mask[row, length - len(tokens):] = 1
  return ids, mask


def _init_decode(cache, last_logits, batch, *, max_new_tokens, top_logprobs, pad_id,
                 constraint=None) -> _Decode:
  return _Decode(jnp.zeros((), jnp.int32), cache, last_logits,
                 jnp.full((batch, max_new_tokens), pad_id, jnp.int32),
                 jnp.zeros((batch, max_new_tokens), jnp.float32),
                 jnp.zeros((batch, max_new_tokens, top_logprobs), jnp.int32),
                 jnp.zeros((batch, max_new_tokens, top_logprobs), jnp.float32),
                 jnp.zeros((batch,), jnp.int32), jnp.zeros((batch,), bool),
                 None if constraint is None else constraint.states)


def _decode_until(model, carry: _Decode, key, temperature, top_p, stop_step, tables=None, *,
                  top_k, eos_ids, pad_id) -> _Decode:
  """Decodes from carry.step up to stop_step (exclusive), leaving early once every row is done."""
  batch = carry.tokens.shape[0]
  eos = jnp.asarray(eos_ids if eos_ids else (-1,), jnp.int32)

  def cond(c):
    return (c.step < stop_step) & ~jnp.all(c.done)

  def body(c):
    step_key = (jax.vmap(jax.random.fold_in, (0, None))(key, c.step) if key.ndim
                else jax.random.fold_in(key, c.step))
    # A constraint masks only the draw: log-probs stay those of the model's raw logits.
    token = sample_logits(c.logits if tables is None else
                          token_dfa.allowed_logits(c.logits, tables, c.dfa),
                          step_key, temperature, top_p, top_k)
    dfa = None if tables is None else token_dfa.advance(tables, c.dfa, token, c.done)
    # The [B,V] log-probs are materialised only when top_logprobs asks for them.
    logp, shifted, lse = chosen_logprob(c.logits.astype(jnp.float32), token)
    token = jnp.where(c.done, pad_id, token)
    tokens = jax.lax.dynamic_update_slice(c.tokens, token[:, None], (0, c.step))
    logprobs = jax.lax.dynamic_update_slice(c.logprobs, jnp.where(c.done, 0.0, logp)[:, None],
                                            (0, c.step))
    top_ids, top_logprobs = c.top_ids, c.top_logprobs
    if top_ids.shape[-1]:
      vals, idx = jax.lax.top_k(shifted - lse, top_ids.shape[-1])
      top_ids = jax.lax.dynamic_update_slice(top_ids, idx[:, None].astype(jnp.int32),
                                             (0, c.step, 0))
      top_logprobs = jax.lax.dynamic_update_slice(top_logprobs, vals[:, None], (0, c.step, 0))
    lengths = c.lengths + (~c.done).astype(jnp.int32)
    done = c.done | jnp.isin(token, eos)
    # Stopped rows keep decoding pad tokens (cheaper than compacting); their outputs are masked.
    next_logits, cache = model.extend(token[:, None], jnp.ones((batch, 1), jnp.int32), c.cache)
    return _Decode(c.step + 1, cache, next_logits[:, 0], tokens, logprobs, top_ids, top_logprobs,
                   lengths, done, dfa)

  return jax.lax.while_loop(cond, body, carry)


def _output(c: _Decode) -> SampleOutput:
  return SampleOutput(c.tokens, c.logprobs, c.lengths, c.top_ids, c.top_logprobs)


def _generate_impl(graphdef, state, cache, prompt_ids, prompt_mask, key, temperature, top_p,
                   constraint=None, *, max_new_tokens, top_k, eos_ids, pad_id, top_logprobs=0,
                   prefill_rows=0):
  model = nnx.merge(graphdef, state)
  last_logits, cache = prefill(model, cache, prompt_ids, prompt_mask, prefill_rows)
  carry = _init_decode(cache, last_logits, prompt_ids.shape[0], max_new_tokens=max_new_tokens,
                       top_logprobs=top_logprobs, pad_id=pad_id, constraint=constraint)
  carry = _decode_until(model, carry, key, temperature, top_p, max_new_tokens,
                        None if constraint is None else constraint[:2], top_k=top_k,
                        eos_ids=eos_ids, pad_id=pad_id)
  # Returning the cache lets XLA alias the donated input buffer: decoding updates it in place.
  return _output(carry), carry.cache


def _start_impl(graphdef, state, cache, prompt_ids, prompt_mask, constraint=None, *,
                max_new_tokens, top_logprobs, pad_id, prefill_rows=0) -> _Decode:
  model = nnx.merge(graphdef, state)
  last_logits, cache = prefill(model, cache, prompt_ids, prompt_mask, prefill_rows)
  return _init_decode(cache, last_logits, prompt_ids.shape[0], max_new_tokens=max_new_tokens,
                      top_logprobs=top_logprobs, pad_id=pad_id, constraint=constraint)


def _chunk_impl(graphdef, state, carry, key, temperature, top_p, stop_step, cancel, tables=None,
                *, top_k, eos_ids, pad_id) -> _Decode:
  # Cancelled rows are marked done: they stop counting tokens, and once every row is done the
  # loop exits without running the rest of the chunk.
  carry = carry._replace(done=carry.done | cancel)
  return _decode_until(nnx.merge(graphdef, state), carry, key, temperature, top_p, stop_step,
                       tables, top_k=top_k, eos_ids=eos_ids, pad_id=pad_id)


def _jit(fn):
  return jax.jit(fn, static_argnames=("graphdef", "max_new_tokens", "top_k", "eos_ids", "pad_id",
                                      "top_logprobs", "prefill_rows"),
                 donate_argnames=("cache",))


_generate_jit = _jit(_generate_impl)  # module attribute so tests can wrap the traced function
_start_jit = jax.jit(_start_impl, donate_argnames=("cache",),
                     static_argnames=("graphdef", "max_new_tokens", "top_logprobs", "pad_id",
                                      "prefill_rows"))
# stop_step is traced, so every chunk of a decode reuses one compiled program.
_chunk_jit = jax.jit(_chunk_impl, static_argnames=("graphdef", "top_k", "eos_ids", "pad_id"),
                     donate_argnames=("carry",))


def generate(graphdef, state, prompt_ids, prompt_mask, key, *, max_new_tokens: int,
             temperature: float = 1.0, top_p: float = 1.0, top_k: int = 0,
             eos_ids: Sequence[int] = (), pad_id: int = 0, bucket: bool = True,
             mesh: jax.sharding.Mesh | None = None, top_logprobs: int = 0,
             chunk_size: int = 0, weights_dtype: str = "", prefill_rows: int = 0,
             on_chunk: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray] | None = None,
             constraint: token_dfa.Constraint | None = None) -> SampleOutput:
  """Samples up to max_new_tokens per row.

  Args:
    graphdef, state: the model, split with `nnx.split`.
    prompt_ids, prompt_mask: [B,P] int, left-padded (real tokens flush right, see `left_pad`).
    key: one PRNG key, or [B] keys (one per row: a row's samples then do not depend on which
      other rows share its batch).
    bucket: pad the prompt length up to `prompt_bucket(P)` (a few compiled programs).
    top_logprobs: K > 0 also returns the K most likely tokens and log-probs at every step.
    chunk_size: > 0 decodes in jitted chunks of this many steps (one compiled program for every
      chunk) and calls `on_chunk(lengths [B] int32, done [B] bool, tokens [B,N] int32)` on the
      host between chunks (tokens so far, for streaming and stop strings);
      it returns a [B] bool mask of rows to stop now (cancelled requests, rows past their own
      token budget). A batch whose rows are all done or stopped ends at that chunk boundary.
      There is no per-token Python call either way.
    mesh: splits the batch over "data" (place the weights first with `lib.models.shard_model`).
    weights_dtype: "" samples from `state` as it is; e.g. "bfloat16" from a copy of its weights
      in that dtype, with a KV cache of that dtype (`lib.generate.prefill.rollout_weights`).
    prefill_rows: > 0 prefills this many rows at a time (`lib.generate.prefill.prefill`; it must
      divide B), bounding the prefill's [rows, heads, P, P] attention scores.
    constraint: per-row token DFAs (`lib.generate.token_dfa.Constraint`: table, token classes, start
      states [B]); each draw is masked to the tokens the row's state allows (EOS only where its
      output may end); None (the default) compiles the unconstrained program.

  Returns:
    SampleOutput (tokens/logprobs [B,N], lengths [B], top_ids/top_logprobs [B,N,K]).
  """
  prompt_ids = np.asarray(prompt_ids, np.int32)
  prompt_mask = np.asarray(prompt_mask, np.int32)
  if prompt_ids.shape != prompt_mask.shape or prompt_ids.ndim != 2:
    raise ValueError(f"prompt_ids {prompt_ids.shape} and prompt_mask {prompt_mask.shape} must be [B,P]")
  if not prompt_mask[:, -1].all():
    raise ValueError("prompts must be left-padded: the last column must be a real token in every row")
  if max_new_tokens < 1:
    raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
  batch, length = prompt_ids.shape
  if not jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key):
    key = jax.random.wrap_key_data(key)  # raw uint32 keys: same random bits, one code path
  if key.shape not in ((), (batch,)):
    raise ValueError(f"key must be one PRNG key or one per row ({batch}), got shape {key.shape}")
  if bucket and prompt_bucket(length) > length:
    extra = prompt_bucket(length) - length
    prompt_ids = np.pad(prompt_ids, ((0, 0), (extra, 0)), constant_values=pad_id)
    prompt_mask = np.pad(prompt_mask, ((0, 0), (extra, 0)))
  if weights_dtype:
    graphdef, state = rollout_weights(graphdef, state, weights_dtype)
  model = nnx.merge(graphdef, state)   # the cache takes the sampled weights' dtype
  cache = model.init_cache(batch, prompt_ids.shape[1] + max_new_tokens, weights_dtype or None)
  prompt_ids, prompt_mask = jnp.asarray(prompt_ids), jnp.asarray(prompt_mask)
  if mesh is not None:   # rows split over the batch axes when they divide them, else replicated
    split = batch % (mesh.shape["data"] * mesh.shape["fsdp"]) == 0
    place = lambda x: (x if not x.ndim else sharding_lib.shard_batch(x, mesh) if split
                       else jax.device_put(x, sharding_lib.replicated(mesh)))
    cache, prompt_ids, prompt_mask = jax.tree.map(place, (cache, prompt_ids, prompt_mask))
  static = dict(top_k=int(top_k), eos_ids=tuple(int(e) for e in eos_ids), pad_id=int(pad_id))
  temperature, top_p = jnp.float32(temperature), jnp.float32(top_p)
  if chunk_size <= 0:
    out, _ = _generate_jit(graphdef, state, cache, prompt_ids, prompt_mask, key, temperature,
                           top_p, constraint, max_new_tokens=max_new_tokens,
                           top_logprobs=int(top_logprobs), prefill_rows=int(prefill_rows),
                           **static)
    return out
  carry = _start_jit(graphdef, state, cache, prompt_ids, prompt_mask, constraint,
                     max_new_tokens=max_new_tokens, top_logprobs=int(top_logprobs),
                     pad_id=int(pad_id), prefill_rows=int(prefill_rows))
  cancel = np.zeros((batch,), bool)
  step = 0
  while True:
    stop_step = min(step + chunk_size, max_new_tokens)
    carry = _chunk_jit(graphdef, state, carry, key, temperature, top_p, jnp.int32(stop_step),
                       jnp.asarray(cancel), None if constraint is None else constraint[:2],
                       **static)
    step, lengths, done, tokens = jax.device_get((carry.step, carry.lengths, carry.done,
                                                  carry.tokens))
    if step >= max_new_tokens or done.all():
      break
    if on_chunk is not None:
      cancel = np.asarray(on_chunk(lengths, done, tokens), bool) | cancel
      if (cancel | done).all():
        break
  return _output(carry)


@dataclasses.dataclass
class DecodedText:
  """One sampled continuation. finish_reason: "stop" (EOS id or stop string) or "length"."""
  text: str
  token_ids: list[int]
  logprobs: list[float]
  prompt_tokens: int
  completion_tokens: int
  finish_reason: str


def default_eos_ids(tokenizer, config=None) -> tuple[int, ...]:
  """Sorted EOS ids: the tokenizer's, `config.eos_token_ids` and <|im_end|>/<|endoftext|> if in
  the vocab. Args: tokenizer: a HF tokenizer. config: a model config, or None."""
  ids = set(getattr(config, "eos_token_ids", ()) or ())
  if tokenizer.eos_token_id is not None:
    ids.add(tokenizer.eos_token_id)
  vocab = tokenizer.get_vocab()
  ids.update(vocab[t] for t in ("<|im_end|>", "<|endoftext|>") if t in vocab)
  return tuple(sorted(ids))


def cut_at_stop_strings(tokenizer, token_ids: list[int], stop: Sequence[str]):
  """-> (text before the first stop string, number of tokens up to the one completing it) or None
  when no stop string occurs. Binary search over prefixes: O(log n) detokenisations.

  Args:
    tokenizer: decodes ids. token_ids: the generated ids. stop: stop strings (empty ones ignored).
  """
  text = tokenizer.decode(token_ids)
  hits = [(text.find(s), s) for s in stop if s and s in text]
  if not hits:
    return None
  start, first = min(hits)
  lo, hi = 1, len(token_ids)  # smallest prefix whose text already contains the stop string
  while lo < hi:
    mid = (lo + hi) // 2
    if first in tokenizer.decode(token_ids[:mid]):
      hi = mid
    else:
      lo = mid + 1
  return text[:start], lo


def finish_row(tokenizer, token_ids: list[int], eos_ids: Sequence[int], stop: Sequence[str] = ()
               ) -> tuple[str, int, str]:
  """One row's generated tokens -> (text, tokens kept, finish_reason).

  A final EOS token is kept in the count but not in the text ("stop"); a stop string cuts the text
  right before it and the tokens after the one completing it ("stop"); otherwise "length".

  Args:
    tokenizer: decodes ids. token_ids: the row's generated ids (up to its length).
    eos_ids: ids that end a row. stop: stop strings.
  """
  n = len(token_ids)
  ended_on_eos = n > 0 and token_ids[-1] in eos_ids
  body = token_ids[:-1] if ended_on_eos else token_ids
  cut = cut_at_stop_strings(tokenizer, body, stop) if stop and body else None
  if cut is not None:
    return cut[0], cut[1], "stop"
  return tokenizer.decode(body), n, "stop" if ended_on_eos else "length"


def generate_text(model, tokenizer, prompts: Sequence, key, *, max_new_tokens: int = 256,
                  temperature: float = 1.0, top_p: float = 1.0, top_k: int = 0,
                  stop: Sequence[str] = (), eos_ids: Sequence[int] | None = None,
                  template_kwargs: dict | None = None, mesh=None, pad_batch: bool = True,
                  constraint: token_dfa.TokenDFA | None = None) -> list[DecodedText]:
  """Text in, text out. Each prompt is a raw string (tokenised as is) or a list of chat messages
  ({"role", "content"} dicts, rendered with the tokenizer's chat template plus the generation
  prompt; `template_kwargs` go to the template, e.g. enable_thinking=False for Qwen3).
  Args: model (NNX, with `config`), tokenizer, prompts; key: one PRNG key; sampling settings
  and mesh as `generate`; stop: stop strings; eos_ids: default `default_eos_ids`;
  pad_batch: round the batch up to a power of two with copies of the first prompt (dropped from
  the result), so callers with varying batch sizes reuse a few compiled programs;
  constraint: a `token_dfa.TokenDFA` every row's output must follow.
  Returns: one DecodedText per prompt."""
  encoded = []
  for prompt in prompts:
    if isinstance(prompt, str):
      encoded.append(tokenizer.encode(prompt, add_special_tokens=False))
    else:
      text = tokenizer.apply_chat_template(list(prompt), tokenize=False, add_generation_prompt=True,
                                           **(template_kwargs or {}))
      encoded.append(tokenizer.encode(text, add_special_tokens=False))
  eos_ids = default_eos_ids(tokenizer, model.config) if eos_ids is None else tuple(eos_ids)
  pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
  rows = bucket_length(len(encoded), minimum=1) if pad_batch else len(encoded)
  ids, mask = left_pad(encoded + [encoded[0]] * (rows - len(encoded)), pad_id)
  if constraint is not None:
    constraint = token_dfa.constraint([constraint] * rows, model.config.vocab_size)
  out = generate(*nnx.split(model), ids, mask, key, max_new_tokens=max_new_tokens,
                 temperature=temperature, top_p=top_p, top_k=top_k, eos_ids=eos_ids, pad_id=pad_id,
                 mesh=mesh, constraint=constraint)
  tokens, logprobs, lengths = jax.device_get((out.tokens, out.logprobs, out.lengths))
  completions = []
  for row, prompt_ids in enumerate(encoded):
    n = int(lengths[row])
    token_ids, row_logprobs = tokens[row, :n].tolist(), logprobs[row, :n].tolist()
    text, n, reason = finish_row(tokenizer, token_ids, eos_ids, stop)
    token_ids, row_logprobs = token_ids[:n], row_logprobs[:n]
    completions.append(DecodedText(text=text, token_ids=token_ids, logprobs=row_logprobs,
                                  prompt_tokens=len(prompt_ids), completion_tokens=n,
                                  finish_reason=reason))
  return completions
