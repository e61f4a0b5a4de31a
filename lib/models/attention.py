"""Grouped-query softmax attention shared by Qwen2/3 (`lib.models.qwen.model.Attention`) and
Qwen3.5 (`lib.models.qwen3_5.model.GatedAttention`): the per-call Context, the KV cache, RoPE and
the attention block around them (fused q/k/v projection, cache, attention, output projection).

Shapes: B batch, T new tokens, S cache slots, H query heads, K kv heads, G = H/K, D head_dim.
"""
from typing import NamedTuple

import flax.struct
import jax
import jax.numpy as jnp
from flax import nnx

from lib.models.layers import COLUMNS, ROWS, Dense, FusedDense

_NEG = jnp.finfo(jnp.float32).min  # finite, so fully masked (padding) query rows give no NaN


class Context(NamedTuple):
  """What every layer may need about the tokens of one call, computed once per call.

  positions [B,T] int32 RoPE positions; token_mask [B,T] bool real (non-pad) tokens;
  attn_mask [B,T,S] bool which keys each query sees (S = T without cache);
  cache_index: int32 scalar slot of the first new token, None without cache.
  """
  positions: jax.Array
  token_mask: jax.Array
  attn_mask: jax.Array
  cache_index: jax.Array | None


def heads_major(x):
  """[B,T,K,D] -> [B,K,T,D], the K cache's layout (`KVCache`)."""
  return jnp.swapaxes(x, 1, 2)


def slots_last(x):
  """[B,T,K,D] -> [B,K,D,T], the V cache's layout (`KVCache`)."""
  return jnp.transpose(x, (0, 2, 3, 1))


@flax.struct.dataclass
class KVCache:
  """Decode state of one attention layer: k [B,K,S,D] after q/k norm and RoPE, v [B,K,D,S].

  Heads before slots, and V with its slots last: the layouts in which the attention's two batched
  matmuls (over B and K) both contract the operands' last axis, as XLA:CPU's fast matmul kernels
  read them. A decode step then never copies the cache: with [B,S,K,D] for both, XLA transposed
  the whole K and V caches in every layer at every step (15% of a batch-8 step in the profile),
  and with V as [B,K,S,D] its product ran on a slower generic kernel.
  """
  k: jax.Array
  v: jax.Array

  @classmethod
  def empty(cls, batch: int, kv_heads: int, max_len: int, head_dim: int, dtype) -> "KVCache":
    """Zero K [B, kv_heads, S, head_dim] and V [B, kv_heads, head_dim, S] with S = max_len slots."""
    return cls(k=jnp.zeros((batch, kv_heads, max_len, head_dim), dtype),
               v=jnp.zeros((batch, kv_heads, head_dim, max_len), dtype))

  def write(self, k, v, index) -> "KVCache":
    """The cache with T new keys and values stored at slots index .. index + T - 1.

    Args:
      k, v: [B,T,K,D] (the projections' layout). index: int32 scalar, the first slot.
    """
    return KVCache(
        k=jax.lax.dynamic_update_slice(self.k, heads_major(k).astype(self.k.dtype),
                                       (0, 0, index, 0)),
        v=jax.lax.dynamic_update_slice(self.v, slots_last(v).astype(self.v.dtype),
                                       (0, 0, 0, index)))


def rope(x, positions, theta, rotary_dim=None):
  """Rotate-half RoPE on the first `rotary_dim` channels; the rest pass through.

  Args:
    x: [B,T,N,D] queries or keys.
    positions: [B,T] int.
    theta: the RoPE base.
    rotary_dim: R <= D, even; None rotates all D channels.

  Returns:
    x rotated, [B,T,N,D], same dtype.
  """
  d = x.shape[-1]
  r = d if rotary_dim is None else rotary_dim
  inv_freq = 1.0 / (theta ** (jnp.arange(0, r, 2, dtype=jnp.float32) / r))
  angles = positions[..., None].astype(jnp.float32) * inv_freq  # [B,T,R/2]
  cos, sin = jnp.cos(angles)[:, :, None, :], jnp.sin(angles)[:, :, None, :]
  x1, x2 = jnp.split(x[..., :r].astype(jnp.float32), 2, axis=-1)
  rotated = jnp.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1).astype(x.dtype)
  return rotated if r == d else jnp.concatenate([rotated, x[..., r:]], axis=-1)


def attend(q, k, v, mask):
  """Grouped-query softmax attention (scores in float32).

  Args:
    q: [B,T,H,D]; k: [B,K,S,D], v: [B,K,D,S] (`KVCache`'s layouts), H a multiple of K.
    mask: [B,T,S] bool, which keys each query sees.

  Returns:
    [B,T,H,D] in v's dtype.
  """
  b, t, h, d = q.shape
  kv_heads = k.shape[1]
  q = q.reshape(b, t, kv_heads, h // kv_heads, d)
  scores = jnp.einsum("btkgd,bksd->bkgts", q, k, preferred_element_type=jnp.float32) * d ** -0.5
  scores = jnp.where(mask[:, None, None], scores, _NEG)
  probs = jax.nn.softmax(scores, axis=-1).astype(v.dtype)
  return jnp.einsum("bkgts,bkds->btkgd", probs, v).reshape(b, t, h, d)


def qkv_columns(config, query_width: int) -> tuple[tuple[int, int, int], int]:
  """(widths, groups) of the fused q/k/v projection (`lib.models.layers.FusedDense`).

  Its columns run kv head by kv head: that head's G queries, its key, its value. A "model"
  sharding over whole kv groups then splits q, k and v on each device without communication.

  Args:
    config: a QwenConfig or Qwen35Config (num_heads, num_kv_heads, head_dim).
    query_width: columns per query head (head_dim, or 2 x head_dim with Qwen3.5's output gate).
  Returns:
    ((G x query_width, head_dim, head_dim), num_kv_heads).
  """
  group = config.num_heads // config.num_kv_heads
  return (group * query_width, config.head_dim, config.head_dim), config.num_kv_heads


class GroupedQueryAttention(nnx.Module):
  """The attention block both families share: `qkv_proj` (one matmul for q, k and v), the KV
  cache, GQA softmax attention and `o_proj`. Subclasses treat q and k between `project` and
  `attend_cached` (norms, RoPE) and follow the per-layer protocol of lib/models/qwen/model.py."""

  def __init__(self, config, *, query_width, qkv_bias, o_bias, dtype, rngs):
    """The block's projections, random.

    Args:
      config: a QwenConfig or Qwen35Config (hidden_size, num_heads, num_kv_heads, head_dim).
      query_width: columns per query head (see `qkv_columns`).
      qkv_bias, o_bias: whether the q/k/v and the output projections have biases.
      dtype, rngs: as `lib.models.layers.Dense`.
    """
    c = config
    self.num_heads, self.num_kv_heads, self.head_dim = c.num_heads, c.num_kv_heads, c.head_dim
    self.query_width = query_width
    widths, groups = qkv_columns(c, query_width)
    self.qkv_proj = FusedDense(c.hidden_size, widths, groups, bias=qkv_bias, sharding=COLUMNS,
                               dtype=dtype, rngs=rngs)
    self.o_proj = Dense(c.num_heads * c.head_dim, c.hidden_size, bias=o_bias, sharding=ROWS,
                        dtype=dtype, rngs=rngs)

  def init_cache(self, batch, max_len, dtype) -> KVCache:
    """An empty KV cache for this layer.

    Args:
      batch: B rows. max_len: S slots. dtype: of the buffers.

    Returns:
      KVCache with zero K [B, num_kv_heads, S, head_dim] and V [B, num_kv_heads, head_dim, S].
    """
    return KVCache.empty(batch, self.num_kv_heads, max_len, self.head_dim, dtype)

  def project(self, x):
    """x [B,T,hidden] -> (q [B,T,H,query_width], k [B,T,K,D], v [B,T,K,D]), one matmul."""
    b, t, _ = x.shape
    q, k, v = self.qkv_proj(x)
    return (q.reshape(b, t, self.num_heads, self.query_width),
            k.reshape(b, t, self.num_kv_heads, self.head_dim),
            v.reshape(b, t, self.num_kv_heads, self.head_dim))

  def attend_cached(self, q, k, v, ctx: Context, cache: KVCache | None):
    """Attention over the new keys and values, and the cached ones when there is a cache.

    Args:
      q: [B,T,H,D], k and v: [B,T,K,D] (after norms and RoPE).
      ctx: the call's Context. cache: this layer's KVCache, or None.
    Returns:
      (out [B,T,H,D], the cache with the new k and v written, or None).
    """
    if cache is None:
      k, v = heads_major(k), slots_last(v)
    else:
      cache = cache.write(k, v, ctx.cache_index)
      k, v = cache.k, cache.v
    return attend(q, k.astype(q.dtype), v.astype(q.dtype), ctx.attn_mask), cache
