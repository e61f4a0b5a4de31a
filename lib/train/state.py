"""What every trainer shares: the train-state pytree, the `apply_fn` protocol and its adapter for
Flax NNX models, and row-chunked scoring (`map_row_chunks`). Per-token log-probabilities of
given logits are `lib.models.logprobs.token_logprobs`.

apply_fn protocol:  apply_fn(params, input_ids [B, T] int32, attention_mask [B, T]) -> logits
[B, T, V], where logits[:, t] scores token t + 1. Trainers see only this function and a params
pytree, so any model (lib/models, a test's tiny LM) plugs in through `nnx_apply_fn`. Keywords:
`last=K` keeps the last K positions only; `hidden=True` returns (final hidden states [B, T, D],
output-head weight [D, V]) instead of logits, for the vocabulary-chunked losses
(`lib.models.chunked`, which never hold [B, T, V]).
"""
from typing import Any, Callable

import flax.struct
import jax
import jax.numpy as jnp
import optax
from flax import nnx

ApplyFn = Callable[[Any, jax.Array, jax.Array], jax.Array]


@flax.struct.dataclass
class TrainState:
  """Optimizer step counter, trainable params and optimizer state (all pytrees of arrays)."""
  step: jax.Array
  params: Any
  opt_state: Any

  @classmethod
  def create(cls, params: Any, tx: optax.GradientTransformation) -> "TrainState":
    """A step-0 state.

    Args:
      params: the trainable params pytree.
      tx: the optimizer; its `init(params)` gives the optimizer state.
    Returns:
      TrainState with step int32 scalar 0.
    """
    return cls(step=jnp.zeros((), jnp.int32), params=params, opt_state=tx.init(params))


def positions_from_mask(attention_mask: jax.Array) -> jax.Array:
  """Position ids that skip padding (left or right): cumsum(mask) - 1, clamped at 0.

  Args:
    attention_mask: [B, T], 1 = token, 0 = padding.
  Returns:
    int32 [B, T] positions.
  """
  return jnp.maximum(jnp.cumsum(attention_mask.astype(jnp.int32), axis=-1) - 1, 0)


def nnx_apply_fn(model: nnx.Module, compute_dtype: Any = None) -> tuple[ApplyFn, Any]:
  """Splits an NNX model into (apply_fn, params).

  The model is called as `model(input_ids, attention_mask=mask, positions=positions)`, the
  lib/models signature. Non-trainable state (e.g. rotary tables) is closed over as constants.
  With `compute_dtype` (e.g. jnp.bfloat16) floating params are cast on the fly, keeping float32
  master weights in the optimizer (mixed precision).

  Args:
    model: an NNX model with the lib/models call signature (and `hidden_states`/`logits` for
      apply_fn's `last=`).
    compute_dtype: None (no casting) or the dtype floating params are cast to per call.
  Returns:
    (apply_fn, params): apply_fn(params, input_ids [B,T], attention_mask [B,T], last=0,
    hidden=False) -> float32 logits [B,T,V] (or [B,last,V]), or with hidden=True (hidden
    [B,T,D] (or [B,last,D]) in the compute dtype, head weight [D,V] in the params' dtype);
    params the model's nnx.Param state.
  """
  graphdef, params, rest = nnx.split(model, nnx.Param, ...)

  def apply_fn(p, input_ids, attention_mask, last: int = 0, hidden: bool = False):
    """-> float32 logits [B, T, V], or only those of the last `last` positions [B, last, V]
    (the output head and softmax then run on `last` positions instead of T); with `hidden`,
    (final-norm hidden states, output-head weight [D, V]) and no head applied."""
    master = p
    if compute_dtype is not None:
      p = jax.tree.map(
          lambda x: x.astype(compute_dtype) if jnp.issubdtype(x.dtype, jnp.floating) else x, p)
    m = nnx.merge(graphdef, p, rest)
    positions = positions_from_mask(attention_mask)
    if hidden:
      h = m.hidden_states(input_ids, attention_mask=attention_mask, positions=positions)
      # The head weight in the params' own dtype: the chunked losses cast it per chunk, so its
      # gradient sums over the chunks in float32, not in the compute dtype.
      return (h[:, -last:] if last else h), nnx.merge(graphdef, master, rest).head_weight()
    if last:
      h = m.hidden_states(input_ids, attention_mask=attention_mask, positions=positions)
      return m.logits(h[:, -last:]).astype(jnp.float32)
    logits = m(input_ids, attention_mask=attention_mask, positions=positions)
    return logits.astype(jnp.float32)

  return apply_fn, params


def map_row_chunks(fn: Callable, micro_rows: int, *arrays: jax.Array) -> Any:
  """fn(*arrays) computed `micro_rows` rows at a time (`lax.map` over [R / m, m, ...] chunks,
  inside the caller's jit), its [m, ...] outputs joined back to [R, ...]. For the no-gradient
  scoring passes of a rollout (GRPO's old/reference log-probs, OPSD's old log-probs): their
  [rows, N, V] float32 logits exist for one chunk at a time, as in the update's micro-batches.

  Args:
    fn: row-wise function of [R, ...] arrays -> a pytree of [R, ...] arrays.
    micro_rows: rows per chunk; 0, >= R or not a divisor of R: one call over every row.
    *arrays: [R, ...] arrays.
  Returns:
    fn's output, as one call over every row would give it.
  """
  rows = arrays[0].shape[0]
  if not micro_rows or micro_rows >= rows or rows % micro_rows:
    return fn(*arrays)
  chunks = [x.reshape(rows // micro_rows, micro_rows, *x.shape[1:]) for x in arrays]
  out = jax.lax.map(lambda c: fn(*c), chunks)
  return jax.tree.map(lambda y: y.reshape(rows, *y.shape[2:]), out)
