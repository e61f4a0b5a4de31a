"""Qwen2/Qwen2.5/Qwen3 decoder in Flax NNX.

Shapes: B batch, T new tokens, S cache slots, H query heads, K kv heads, G = H/K, D head_dim.

Every layer follows one protocol so other layer types (e.g. linear attention in a hybrid model) can
sit in the same stack:
  layer.init_cache(batch, max_len, dtype) -> a pytree holding that layer's decode state
  layer(x [B,T,hidden], ctx: Context, cache | None) -> (x, cache | None)
The model-level `Cache` holds one such pytree per layer plus the slot mask and write index that all
layers share.

Parameters carry `out_sharding` names for the "model" axis of `lib.sharding.make_mesh`'s mesh:
column-parallel projections shard their output features on "model", row-parallel ones their input
features; `lib.models.sharding` places them.
"""
from typing import NamedTuple

import flax.struct
import jax
import jax.numpy as jnp
from flax import nnx

from lib.models import remat as remat_lib
from lib.models.matmul import dense_matmul
from lib.models.qwen.config import QwenConfig

WEIGHT_INIT = jax.nn.initializers.normal(0.02)  # transformers' initializer_range default
_NEG = jnp.finfo(jnp.float32).min  # finite, so fully masked (padding) query rows give no NaN


def sharded_param(value, sharding) -> nnx.Param:
  """A parameter annotated with logical axis names; not placed on devices yet.

  Args:
    value: the initial array.
    sharding: one mesh axis name or None per dimension of `value`, e.g. (None, "model").
  Returns:
    An nnx.Param carrying `sharding` as its out_sharding.
  """
  # eager_sharding=False: annotate only; `lib.models.sharding` places it once a mesh is given.
  return nnx.Param(value, out_sharding=sharding, eager_sharding=False)


class Dense(nnx.Module):
  """y = x @ kernel (+ bias); kernel is [in, out] (the transpose of torch's Linear.weight)."""

  def __init__(self, din, dout, *, bias, sharding, dtype, rngs):
    self.kernel = sharded_param(WEIGHT_INIT(rngs.params(), (din, dout), dtype), sharding)
    self.bias = sharded_param(jnp.zeros((dout,), dtype), sharding[1:]) if bias else None

  def __call__(self, x):
    y = dense_matmul(x, self.kernel[...])     # x @ kernel; its weight gradient suits XLA:CPU
    return y if self.bias is None else y + self.bias[...]


class RMSNorm(nnx.Module):
  """x / rms(x) * scale, statistics in float32 and the product in the input dtype (as transformers)."""

  def __init__(self, dim, eps, *, dtype):
    self.scale = sharded_param(jnp.ones((dim,), dtype), (None,))
    self.eps = eps

  def __call__(self, x):
    x32 = x.astype(jnp.float32)
    x32 = x32 * jax.lax.rsqrt(jnp.mean(x32 * x32, axis=-1, keepdims=True) + self.eps)
    return self.scale[...] * x32.astype(x.dtype)


def rope(x, positions, theta):
  """Rotate-half RoPE over all D channels.

  Args:
    x: [B,T,N,D] queries or keys.
    positions: [B,T] int.
    theta: the RoPE base.

  Returns:
    x rotated, [B,T,N,D], same dtype.
  """
  d = x.shape[-1]
  inv_freq = 1.0 / (theta ** (jnp.arange(0, d, 2, dtype=jnp.float32) / d))
  angles = positions[..., None].astype(jnp.float32) * inv_freq  # [B,T,D/2]
  cos, sin = jnp.cos(angles)[:, :, None, :], jnp.sin(angles)[:, :, None, :]
  x1, x2 = jnp.split(x.astype(jnp.float32), 2, axis=-1)
  return jnp.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1).astype(x.dtype)


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


def heads_major(x):
  """[B,T,K,D] -> [B,K,T,D], the K cache's layout (`KVCache`)."""
  return jnp.swapaxes(x, 1, 2)


def slots_last(x):
  """[B,T,K,D] -> [B,K,D,T], the V cache's layout (`KVCache`)."""
  return jnp.transpose(x, (0, 2, 3, 1))


@flax.struct.dataclass
class Cache:
  """Decode state of the whole stack: per-layer states, slot mask [B,S] bool, next slot (int32)."""
  layers: tuple
  mask: jax.Array
  index: jax.Array


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


class Attention(nnx.Module):

  def __init__(self, config: QwenConfig, *, dtype, rngs):
    c = config
    self.num_heads, self.num_kv_heads, self.head_dim = c.num_heads, c.num_kv_heads, c.head_dim
    self.rope_theta = c.rope_theta
    q_dim, kv_dim = c.num_heads * c.head_dim, c.num_kv_heads * c.head_dim
    col, row = (None, "model"), ("model", None)
    self.q_proj = Dense(c.hidden_size, q_dim, bias=c.qkv_bias, sharding=col, dtype=dtype, rngs=rngs)
    self.k_proj = Dense(c.hidden_size, kv_dim, bias=c.qkv_bias, sharding=col, dtype=dtype, rngs=rngs)
    self.v_proj = Dense(c.hidden_size, kv_dim, bias=c.qkv_bias, sharding=col, dtype=dtype, rngs=rngs)
    self.o_proj = Dense(q_dim, c.hidden_size, bias=c.o_bias, sharding=row, dtype=dtype, rngs=rngs)
    self.q_norm = RMSNorm(c.head_dim, c.rms_norm_eps, dtype=dtype) if c.qk_norm else None
    self.k_norm = RMSNorm(c.head_dim, c.rms_norm_eps, dtype=dtype) if c.qk_norm else None

  def init_cache(self, batch, max_len, dtype) -> KVCache:
    """An empty KV cache for this layer.

    Args:
      batch: B rows. max_len: S slots. dtype: of the buffers.

    Returns:
      KVCache with zero K [B, num_kv_heads, S, head_dim] and V [B, num_kv_heads, head_dim, S].
    """
    return KVCache.empty(batch, self.num_kv_heads, max_len, self.head_dim, dtype)

  def __call__(self, x, ctx: Context, cache: KVCache | None = None):
    b, t, _ = x.shape
    q = self.q_proj(x).reshape(b, t, self.num_heads, self.head_dim)
    k = self.k_proj(x).reshape(b, t, self.num_kv_heads, self.head_dim)
    v = self.v_proj(x).reshape(b, t, self.num_kv_heads, self.head_dim)
    if self.q_norm is not None:
      q, k = self.q_norm(q), self.k_norm(k)
    q, k = rope(q, ctx.positions, self.rope_theta), rope(k, ctx.positions, self.rope_theta)
    if cache is None:
      k, v = heads_major(k), slots_last(v)
    else:
      cache = cache.write(k, v, ctx.cache_index)
      k, v = cache.k, cache.v
    out = attend(q, k.astype(q.dtype), v.astype(q.dtype), ctx.attn_mask)
    return self.o_proj(out.reshape(b, t, -1)), cache


class MLP(nnx.Module):
  """SwiGLU: down(silu(gate(x)) * up(x))."""

  def __init__(self, config: QwenConfig, *, dtype, rngs):
    h, f = config.hidden_size, config.intermediate_size
    self.gate_proj = Dense(h, f, bias=False, sharding=(None, "model"), dtype=dtype, rngs=rngs)
    self.up_proj = Dense(h, f, bias=False, sharding=(None, "model"), dtype=dtype, rngs=rngs)
    self.down_proj = Dense(f, h, bias=False, sharding=("model", None), dtype=dtype, rngs=rngs)

  def __call__(self, x):
    return self.down_proj(jax.nn.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nnx.Module):
  """Pre-norm residual block: attention then MLP."""

  def __init__(self, config: QwenConfig, *, dtype, rngs):
    self.input_norm = RMSNorm(config.hidden_size, config.rms_norm_eps, dtype=dtype)
    self.attn = Attention(config, dtype=dtype, rngs=rngs)
    self.post_attn_norm = RMSNorm(config.hidden_size, config.rms_norm_eps, dtype=dtype)
    self.mlp = MLP(config, dtype=dtype, rngs=rngs)

  def init_cache(self, batch, max_len, dtype):
    """The attention's empty KVCache (see `Attention.init_cache`).

    Args:
      batch: B rows. max_len: S slots. dtype: of the buffers.
    """
    return self.attn.init_cache(batch, max_len, dtype)

  def __call__(self, x, ctx: Context, cache=None):
    h, cache = self.attn(self.input_norm(x), ctx, cache)
    x = x + h
    return x + self.mlp(self.post_attn_norm(x)), cache


def default_positions(mask):
  """cumsum(mask) - 1, clipped at 0 for left padding: the first real token gets position 0.

  Args:
    mask: [B,T] (1 = token, 0 = padding).

  Returns:
    int32 [B,T] positions.
  """
  return jnp.maximum(jnp.cumsum(mask.astype(jnp.int32), axis=-1) - 1, 0)


class Qwen(nnx.Module):
  """Causal LM. `Qwen(config, rngs=nnx.Rngs(0))` is a random model; `lib.models.load_pretrained`
  fills one from a Hugging Face directory."""

  def __init__(self, config: QwenConfig, *, rngs: nnx.Rngs, dtype=jnp.float32):
    self.config = config
    self.dtype = jnp.dtype(dtype)
    self.embed = sharded_param(
        WEIGHT_INIT(rngs.params(), (config.vocab_size, config.hidden_size), dtype), ("model", None))
    self.layers = nnx.List([DecoderLayer(config, dtype=dtype, rngs=rngs)
                            for _ in range(config.num_layers)])
    self.final_norm = RMSNorm(config.hidden_size, config.rms_norm_eps, dtype=dtype)
    self.lm_head = None if config.tie_word_embeddings else Dense(
        config.hidden_size, config.vocab_size, bias=False, sharding=(None, "model"), dtype=dtype,
        rngs=rngs)

  def __call__(self, input_ids, attention_mask=None, positions=None):
    """Forward pass without a cache (training, scoring).

    Args:
      input_ids: int [B,T].
      attention_mask: [B,T], 1 = token, 0 = padding (left or right); None = all tokens.
      positions: int [B,T] RoPE positions; default cumsum(mask) - 1.

    Returns:
      float32 logits [B,T,V].
    """
    return self.logits(self.hidden_states(input_ids, attention_mask, positions))

  def hidden_states(self, input_ids, attention_mask=None, positions=None):
    """Final-norm hidden states without a cache (training, scoring, embeddings).

    Args:
      input_ids: int [B,T].
      attention_mask: [B,T], 1 = token, 0 = padding (left or right); None = all tokens.
      positions: int [B,T] RoPE positions; default cumsum(mask) - 1.

    Returns:
      [B,T,hidden] in the model's dtype.
    """
    b, t = input_ids.shape
    mask = jnp.ones((b, t), bool) if attention_mask is None else attention_mask.astype(bool)
    if positions is None:
      positions = default_positions(mask)
    causal = jnp.tril(jnp.ones((t, t), bool))
    ctx = Context(positions=positions, token_mask=mask, attn_mask=causal[None] & mask[:, None, :],
                  cache_index=None)
    x, _ = self._run_layers(input_ids, ctx, None)
    return x

  def logits(self, hidden):
    """Projects hidden states onto the vocabulary through the (possibly tied) output head.

    Args:
      hidden: [..., hidden_size].

    Returns:
      float32 logits [..., V].
    """
    w = self.embed[...].T if self.lm_head is None else self.lm_head.kernel[...]
    return jnp.matmul(hidden, w, preferred_element_type=jnp.float32)

  def init_cache(self, batch: int, max_len: int, dtype=None) -> Cache:
    """An empty decode cache.

    Args:
      batch: B rows.
      max_len: S slots (prompt + generated tokens).
      dtype: of the per-layer states; the model's dtype when None.

    Returns:
      Cache: one state per layer, slot mask [B,S] all False, index 0.
    """
    dtype = self.dtype if dtype is None else dtype
    return Cache(layers=tuple(layer.init_cache(batch, max_len, dtype) for layer in self.layers),
                 mask=jnp.zeros((batch, max_len), bool), index=jnp.zeros((), jnp.int32))

  def extend(self, input_ids, attention_mask, cache: Cache):
    """Runs T new tokens into the cache at slot `cache.index`.

    Args:
      input_ids: int [B,T].
      attention_mask: [B,T], 1 = token, 0 = padding (left padding for prompts).
      cache: from `init_cache` or a previous `extend`.

    Returns:
      (float32 logits [B,T,V], the cache advanced by T slots).
    """
    hidden, cache = self.extend_hidden(input_ids, attention_mask, cache)
    return self.logits(hidden), cache

  def extend_hidden(self, input_ids, attention_mask, cache: Cache):
    """`extend` without the output head; the sampler's prefill projects only the last position,
    never [B, prompt, vocab].

    Positions continue from the real tokens already cached, so left-padded prompts and the tokens
    decoded after them get the same positions as the unpadded sequence.

    Args:
      input_ids: int [B,T].
      attention_mask: [B,T], 1 = token, 0 = padding (left padding for prompts).
      cache: from `init_cache` or a previous `extend`.

    Returns:
      (final-norm hidden [B,T,hidden], the cache advanced by T slots).
    """
    t = input_ids.shape[1]
    max_len = cache.mask.shape[1]
    index = cache.index
    slot_mask = jax.lax.dynamic_update_slice(cache.mask, attention_mask.astype(bool), (0, index))
    # = default_positions(slot_mask)[:, index:index + t]: a count of the cached real tokens (a sum
    # over S) instead of a cumsum over all S slots at every decode step.
    cached = jnp.sum(cache.mask, axis=-1, dtype=jnp.int32)[:, None]
    positions = jnp.maximum(cached + jnp.cumsum(attention_mask.astype(jnp.int32), axis=-1) - 1, 0)
    causal = jnp.arange(max_len)[None, :] <= (index + jnp.arange(t))[:, None]  # [T,S]
    ctx = Context(positions=positions, token_mask=attention_mask.astype(bool),
                  attn_mask=causal[None] & slot_mask[:, None, :], cache_index=index)
    x, layer_caches = self._run_layers(input_ids, ctx, cache.layers)
    return x, Cache(layers=layer_caches, mask=slot_mask, index=index + t)

  # Per-layer rematerialisation of cache-free forwards (training); `lib.models.set_remat`.
  remat = "none"

  def _run_layers(self, input_ids, ctx, layer_caches):
    x = jnp.take(self.embed[...], input_ids, axis=0)
    if layer_caches is None and self.remat != "none":
      return self.final_norm(remat_lib.run_layers(self.layers, x, ctx, self.remat)), None
    new_caches = []
    for i, layer in enumerate(self.layers):
      x, c = layer(x, ctx, None if layer_caches is None else layer_caches[i])
      new_caches.append(c)
    return self.final_norm(x), (None if layer_caches is None else tuple(new_caches))
