"""Vocabulary-chunked output head: per-token log-probabilities (and entropies) of given tokens from
the final hidden states and the head weight, `chunk_tokens` token positions at a time, so that at
most a [chunk, V] block of logits exists, in the forward pass and in the backward pass.

    logits[n] = h[n] @ W / tau                h [N, D] (flattened [B, T]), W [D, V], tau > 0
    logp[n]   = logits[n, y_n] - logsumexp_v logits[n, v]
    H[n]      = -sum_v p[n, v] log p[n, v],   p[n] = softmax(logits[n])

The N = B T positions are padded to a multiple of C = chunk_tokens and mapped chunk by chunk
(`jax.lax.map`, a scan) through a `jax.checkpoint`ed body: the forward keeps only each chunk's
[C, D] input, and the backward recomputes that chunk's [C, V] logits (one extra C x D x V matmul
per chunk, ~1/3 more head FLOPs) and accumulates dW [D, V] in the scan carry. Peak head memory
goes from ~3 N V float32 (logits, softmax, their cotangent) to ~3 C V, a factor N / C.

The setting is `loss_chunk_tokens` (SFTConfig, GRPOConfig, OPSDConfig; default
`LOSS_CHUNK_TOKENS`); 0 turns chunking off: the losses then read the full [B, T, V] logits of
`apply_fn` exactly as before. The generalized JSD over chunks is `lib.rl.jsd.chunked_jsd_logprobs`
(built on `map_token_chunks`). A head applied to hidden states comes from
`apply_fn(params, ids, mask, hidden=True) -> (hidden, W)` (lib/train/state.py).
"""
from typing import Any, Callable

import jax
import jax.numpy as jnp

LOSS_CHUNK_TOKENS = 1024  # the default of every trainer's `loss_chunk_tokens`


def head_logits(hidden: jax.Array, head_w: jax.Array, temperature: float = 1.0) -> jax.Array:
  """float32 logits of hidden states under the output head, divided by the temperature.

      logits = (h @ W) / temperature       (matmul accumulated in float32, as `Qwen.logits`)

  W is cast to h's dtype first (bfloat16 compute with float32 master weights: the same product as
  the model's, while W's gradient, summed over the chunks of a `map_token_chunks` scan, adds up
  in W's own dtype).

  Args:
    hidden: [..., D] hidden states (any float dtype).
    head_w: [D, V] output-head weight (the transposed tied embedding or lm_head's kernel).
    temperature: > 0; 1.0 leaves the logits unscaled.
  Returns:
    float32 [..., V] logits.
  """
  logits = jnp.matmul(hidden, head_w.astype(hidden.dtype), preferred_element_type=jnp.float32)
  return logits if temperature == 1.0 else logits / temperature


def logprobs_and_entropy(logits: jax.Array, tokens: jax.Array) -> tuple[jax.Array, jax.Array]:
  """log softmax(logits)[tokens] and the entropy of softmax(logits), from one log-softmax.

      logp = log_softmax(z)[y],     H = -sum_v exp(log_softmax(z)_v) log_softmax(z)_v

  Args:
    logits: [..., V] float32 logits (already temperature-scaled).
    tokens: [...] int ids.
  Returns:
    (logp, entropy), each float32 [...].
  """
  logp_all = jax.nn.log_softmax(logits, axis=-1)
  logp = jnp.take_along_axis(logp_all, tokens[..., None].astype(jnp.int32), axis=-1)[..., 0]
  return logp, -(jnp.exp(logp_all) * logp_all).sum(axis=-1)


def map_token_chunks(fn: Callable, chunk_tokens: int, *arrays: jax.Array) -> Any:
  """fn over the [B, T] token positions of `arrays`, `chunk_tokens` positions at a time, each
  chunk rematerialised in the backward pass (`jax.checkpoint` inside `jax.lax.map`).

  Positions are flattened to N = B T and zero-padded to a multiple of C; the padded positions'
  outputs are dropped (so they get zero gradient). Whatever fn closes over (the head weight) is
  a constant of the scan: its gradient is summed over the chunks.

  Args:
    fn: [C, ...] arrays -> a pytree of [C, ...] arrays, position-wise (no mixing of positions).
    chunk_tokens: C > 0 positions per chunk; C >= N runs fn once on all N positions.
    *arrays: [B, T, ...] arrays sharing B and T.
  Returns:
    fn's outputs reshaped to [B, T, ...].
  """
  if chunk_tokens <= 0:
    raise ValueError(f"chunk_tokens must be > 0; got {chunk_tokens}")
  b, t = arrays[0].shape[:2]
  n = b * t
  flat = [x.reshape(n, *x.shape[2:]) for x in arrays]
  if chunk_tokens >= n:
    out = fn(*flat)
    return jax.tree.map(lambda y: y.reshape(b, t, *y.shape[1:]), out)
  n_chunks = -(-n // chunk_tokens)
  pad = n_chunks * chunk_tokens - n
  chunks = [jnp.pad(x, [(0, pad)] + [(0, 0)] * (x.ndim - 1))
            .reshape(n_chunks, chunk_tokens, *x.shape[1:]) for x in flat]
  body = jax.checkpoint(lambda c: fn(*c), prevent_cse=False)  # in a scan, CSE cannot undo remat
  out = jax.lax.map(body, chunks)
  return jax.tree.map(lambda y: y.reshape(n_chunks * chunk_tokens, *y.shape[2:])[:n]
                      .reshape(b, t, *y.shape[2:]), out)


def chunked_token_logprobs(hidden: jax.Array, head_w: jax.Array, tokens: jax.Array, *,
                           chunk_tokens: int = LOSS_CHUNK_TOKENS, temperature: float = 1.0,
                           with_entropy: bool = False) -> tuple[jax.Array, jax.Array | None]:
  """Per-token log-probabilities (and entropies) of `tokens` under the head applied to `hidden`,
  chunk by chunk (module docstring). Align first: hidden[:, t] must be the state *predicting*
  tokens[:, t].

      logp[b, t] = log_softmax(h[b, t] @ W / tau)[tokens[b, t]]       (<= 0)
      H[b, t]    = -sum_v p log p,   p = softmax(h[b, t] @ W / tau)

  Args:
    hidden: [B, T, D] final hidden states (any float dtype).
    head_w: [D, V] output-head weight.
    tokens: [B, T] int ids.
    chunk_tokens: positions per chunk (> 0).
    temperature: divides the logits before the softmax.
    with_entropy: also return the entropies (else None).
  Returns:
    (logp, entropy or None), float32 [B, T].
  """
  def score(h, y):
    logp, ent = logprobs_and_entropy(head_logits(h, head_w, temperature), y)
    return (logp, ent) if with_entropy else (logp, None)
  return map_token_chunks(score, chunk_tokens, hidden, tokens)

