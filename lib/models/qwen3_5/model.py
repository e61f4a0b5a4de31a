"""Qwen3.5 hybrid decoder (text) in Flax NNX: Gated DeltaNet layers interleaved with gated attention.

Shapes: B batch, T new tokens, S cache slots, H query heads, K kv heads, D head_dim.

The model is a `lib.models.qwen.model.Qwen` with another layer stack, so the sampler drives it
unchanged: full-attention layers keep a `KVCache`, linear layers a `DeltaNetCache` (conv inputs +
state).
Differences from Qwen3 that matter for exactness:
  * every RMSNorm outside the DeltaNet is zero-centred: x/rms(x) * (1 + w), product in float32;
  * q_proj emits, per head, the query followed by an output gate; attention output * sigmoid(gate);
  * RoPE rotates only the first `rotary_dim = head_dim * partial_rotary_factor` channels.
"""
import jax
import jax.numpy as jnp
from flax import nnx

from lib.models.qwen.model import (MLP, WEIGHT_INIT, Context, Dense, KVCache, Qwen, attend,
                                   heads_major, sharded_param, slots_last)
from lib.models.qwen3_5.config import FULL, Qwen35Config
from lib.models.qwen3_5.deltanet import GatedDeltaNet


class ZeroCentredRMSNorm(nnx.Module):
  """x / rms(x) * (1 + w) in float32, cast back to the input dtype; w starts at zero."""

  def __init__(self, dim, eps, *, dtype):
    self.scale = sharded_param(jnp.zeros((dim,), dtype), (None,))
    self.eps = eps

  def __call__(self, x):
    x32 = x.astype(jnp.float32)
    x32 = x32 * jax.lax.rsqrt(jnp.mean(x32 * x32, axis=-1, keepdims=True) + self.eps)
    return (x32 * (1.0 + self.scale[...].astype(jnp.float32))).astype(x.dtype)


def partial_rope(x, positions, theta, rotary_dim):
  """Rotate-half RoPE on the first `rotary_dim` channels; the rest pass through.

  Args:
    x: [B,T,N,D] queries or keys.
    positions: [B,T] int.
    theta: the RoPE base.
    rotary_dim: R <= D, even.

  Returns:
    [B,T,N,D], same dtype.
  """
  inv_freq = 1.0 / (theta ** (jnp.arange(0, rotary_dim, 2, dtype=jnp.float32) / rotary_dim))
  angles = positions[..., None].astype(jnp.float32) * inv_freq  # [B,T,R/2]
  cos, sin = jnp.cos(angles)[:, :, None, :], jnp.sin(angles)[:, :, None, :]
  rot, rest = x[..., :rotary_dim].astype(jnp.float32), x[..., rotary_dim:]
  x1, x2 = jnp.split(rot, 2, axis=-1)
  rot = jnp.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)
  return jnp.concatenate([rot.astype(x.dtype), rest], axis=-1)


class GatedAttention(nnx.Module):
  """GQA softmax attention with q/k zero-centred RMSNorm, partial RoPE and a sigmoid output gate."""

  def __init__(self, config: Qwen35Config, *, dtype, rngs):
    c = config
    self.num_heads, self.num_kv_heads, self.head_dim = c.num_heads, c.num_kv_heads, c.head_dim
    self.rope_theta, self.rotary_dim = c.rope_theta, c.rotary_dim
    q_dim, kv_dim = c.num_heads * c.head_dim, c.num_kv_heads * c.head_dim
    col, row, bias = (None, "model"), ("model", None), c.attention_bias
    # Per head: [query (D) | gate (D)], the layout of the checkpoint's q_proj rows.
    self.q_proj = Dense(c.hidden_size, 2 * q_dim, bias=bias, sharding=col, dtype=dtype, rngs=rngs)
    self.k_proj = Dense(c.hidden_size, kv_dim, bias=bias, sharding=col, dtype=dtype, rngs=rngs)
    self.v_proj = Dense(c.hidden_size, kv_dim, bias=bias, sharding=col, dtype=dtype, rngs=rngs)
    self.o_proj = Dense(q_dim, c.hidden_size, bias=bias, sharding=row, dtype=dtype, rngs=rngs)
    self.q_norm = ZeroCentredRMSNorm(c.head_dim, c.rms_norm_eps, dtype=dtype)
    self.k_norm = ZeroCentredRMSNorm(c.head_dim, c.rms_norm_eps, dtype=dtype)

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
    q, gate = jnp.split(self.q_proj(x).reshape(b, t, self.num_heads, 2 * self.head_dim), 2, axis=-1)
    k = self.k_proj(x).reshape(b, t, self.num_kv_heads, self.head_dim)
    v = self.v_proj(x).reshape(b, t, self.num_kv_heads, self.head_dim)
    q, k = self.q_norm(q), self.k_norm(k)
    q = partial_rope(q, ctx.positions, self.rope_theta, self.rotary_dim)
    k = partial_rope(k, ctx.positions, self.rope_theta, self.rotary_dim)
    if cache is None:
      k, v = heads_major(k), slots_last(v)
    else:
      cache = cache.write(k, v, ctx.cache_index)
      k, v = cache.k, cache.v
    out = attend(q, k.astype(q.dtype), v.astype(q.dtype), ctx.attn_mask)
    out = out * jax.nn.sigmoid(gate.astype(jnp.float32)).astype(out.dtype)
    return self.o_proj(out.reshape(b, t, -1)), cache


class HybridDecoderLayer(nnx.Module):
  """Pre-norm residual block whose token mixer is gated attention or Gated DeltaNet."""

  def __init__(self, config: Qwen35Config, layer_type: str, *, dtype, rngs):
    self.layer_type = layer_type
    self.input_norm = ZeroCentredRMSNorm(config.hidden_size, config.rms_norm_eps, dtype=dtype)
    # Distinct attribute names keep the parameter paths as telling as the checkpoint's keys.
    if layer_type == FULL:
      self.attn, self.linear_attn = GatedAttention(config, dtype=dtype, rngs=rngs), None
    else:
      self.attn, self.linear_attn = None, GatedDeltaNet(config, dtype=dtype, rngs=rngs)
    self.post_attn_norm = ZeroCentredRMSNorm(config.hidden_size, config.rms_norm_eps, dtype=dtype)
    self.mlp = MLP(config, dtype=dtype, rngs=rngs)

  @property
  def mixer(self):
    """The layer's token mixer: GatedAttention or GatedDeltaNet."""
    return self.attn if self.linear_attn is None else self.linear_attn

  def init_cache(self, batch, max_len, dtype):
    """The mixer's empty cache: a KVCache or a DeltaNetCache.

    Args:
      batch: B rows. max_len: S slots (ignored by DeltaNet). dtype: of the cache buffers.
    """
    return self.mixer.init_cache(batch, max_len, dtype)

  def __call__(self, x, ctx: Context, cache=None):
    h, cache = self.mixer(self.input_norm(x), ctx, cache)
    x = x + h
    return x + self.mlp(self.post_attn_norm(x)), cache


class Qwen35(Qwen):
  """Causal LM. `Qwen35(config, rngs=nnx.Rngs(0))` is a random model; `lib.models.load_pretrained`
  fills one from a Hugging Face directory.

  Only the layer stack differs from `Qwen`: its forward, cached `extend`/`extend_hidden` (T > 1
  runs the DeltaNet layers in chunked form from their cached state, T == 1 one recurrent step),
  `logits` and `init_cache` (KV caches for attention layers, O(1) conv + recurrent states for
  DeltaNet layers) are inherited and drive these layers through the per-layer protocol.
  """

  # Builds its own stack instead of calling Qwen.__init__ (which would build Qwen3 layers).
  def __init__(self, config: Qwen35Config, *, rngs: nnx.Rngs, dtype=jnp.float32):
    self.config = config
    self.dtype = jnp.dtype(dtype)
    self.embed = sharded_param(
        WEIGHT_INIT(rngs.params(), (config.vocab_size, config.hidden_size), dtype), ("model", None))
    self.layers = nnx.List([HybridDecoderLayer(config, kind, dtype=dtype, rngs=rngs)
                            for kind in config.layer_types])
    self.final_norm = ZeroCentredRMSNorm(config.hidden_size, config.rms_norm_eps, dtype=dtype)
    self.lm_head = None if config.tie_word_embeddings else Dense(
        config.hidden_size, config.vocab_size, bias=False, sharding=(None, "model"), dtype=dtype,
        rngs=rngs)
