"""Qwen3.5 hybrid decoder (text) in Flax NNX: Gated DeltaNet layers interleaved with gated attention.

Shapes: B batch, T new tokens, S cache slots, H query heads, K kv heads, D head_dim.

The model has the interface of `lib.models.qwen.Qwen` (`__call__`, `hidden_states`, `logits`,
`init_cache`, `extend`) and the same `Cache`/`Context` types, so the sampler drives it unchanged:
full-attention layers keep a `KVCache`, linear layers a `DeltaNetCache` (conv inputs + state).
Differences from Qwen3 that matter for exactness:
  * every RMSNorm outside the DeltaNet is zero-centred: x/rms(x) * (1 + w), product in float32;
  * q_proj emits, per head, the query followed by an output gate; attention output * sigmoid(gate);
  * RoPE rotates only the first `rotary_dim = head_dim * partial_rotary_factor` channels.
"""
import jax
import jax.numpy as jnp
from flax import nnx

from lib.models.deltanet import GatedDeltaNet
from lib.models.qwen import (_INIT, Cache, Context, Dense, KVCache, MLP, _param, attend,
                             default_positions)
from lib.models.qwen3_5_config import FULL, Qwen35Config


class ZeroCentredRMSNorm(nnx.Module):
  """x / rms(x) * (1 + w) in float32, cast back to the input dtype; w starts at zero."""

  def __init__(self, dim, eps, *, dtype):
    self.scale = _param(jnp.zeros((dim,), dtype), (None,))
    self.eps = eps

  def __call__(self, x):
    x32 = x.astype(jnp.float32)
    x32 = x32 * jax.lax.rsqrt(jnp.mean(x32 * x32, axis=-1, keepdims=True) + self.eps)
    return (x32 * (1.0 + self.scale[...].astype(jnp.float32))).astype(x.dtype)


def partial_rope(x, positions, theta, rotary_dim):
  """Rotate-half RoPE on the first `rotary_dim` channels of x [B,T,N,D]; the rest pass through."""
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
    shape = (batch, max_len, self.num_kv_heads, self.head_dim)
    return KVCache(k=jnp.zeros(shape, dtype), v=jnp.zeros(shape, dtype))

  def __call__(self, x, ctx: Context, cache: KVCache | None = None):
    b, t, _ = x.shape
    q, gate = jnp.split(self.q_proj(x).reshape(b, t, self.num_heads, 2 * self.head_dim), 2, axis=-1)
    k = self.k_proj(x).reshape(b, t, self.num_kv_heads, self.head_dim)
    v = self.v_proj(x).reshape(b, t, self.num_kv_heads, self.head_dim)
    q, k = self.q_norm(q), self.k_norm(k)
    q = partial_rope(q, ctx.positions, self.rope_theta, self.rotary_dim)
    k = partial_rope(k, ctx.positions, self.rope_theta, self.rotary_dim)
    if cache is not None:
      at = (0, ctx.cache_index, 0, 0)
      cache = KVCache(k=jax.lax.dynamic_update_slice(cache.k, k.astype(cache.k.dtype), at),
                      v=jax.lax.dynamic_update_slice(cache.v, v.astype(cache.v.dtype), at))
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
    return self.attn if self.linear_attn is None else self.linear_attn

  def init_cache(self, batch, max_len, dtype):
    return self.mixer.init_cache(batch, max_len, dtype)

  def __call__(self, x, ctx: Context, cache=None):
    h, cache = self.mixer(self.input_norm(x), ctx, cache)
    x = x + h
    return x + self.mlp(self.post_attn_norm(x)), cache


class Qwen35(nnx.Module):
  """Causal LM. `Qwen35(config, rngs=nnx.Rngs(0))` is a random model;
  `lib.models.qwen3_5_params.load_qwen3_5` fills one from a Hugging Face directory."""

  def __init__(self, config: Qwen35Config, *, rngs: nnx.Rngs, dtype=jnp.float32):
    self.config = config
    self.dtype = jnp.dtype(dtype)
    self.embed = _param(_INIT(rngs.params(), (config.vocab_size, config.hidden_size), dtype),
                        ("model", None))
    self.layers = nnx.List([HybridDecoderLayer(config, kind, dtype=dtype, rngs=rngs)
                            for kind in config.layer_types])
    self.final_norm = ZeroCentredRMSNorm(config.hidden_size, config.rms_norm_eps, dtype=dtype)
    self.lm_head = None if config.tie_word_embeddings else Dense(
        config.hidden_size, config.vocab_size, bias=False, sharding=(None, "model"), dtype=dtype,
        rngs=rngs)

  def __call__(self, input_ids, attention_mask=None, positions=None):
    """input_ids [B,T] int, attention_mask [B,T] (1 = token, 0 = pad) -> float32 logits [B,T,V]."""
    return self.logits(self.hidden_states(input_ids, attention_mask, positions))

  def hidden_states(self, input_ids, attention_mask=None, positions=None):
    """Final-norm hidden states [B,T,hidden] without a cache (training, scoring, embeddings)."""
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
    """hidden [..., hidden] -> float32 logits [..., V] through the (possibly tied) output head."""
    w = self.embed[...].T if self.lm_head is None else self.lm_head.kernel[...]
    return jnp.matmul(hidden, w, preferred_element_type=jnp.float32)

  def init_cache(self, batch: int, max_len: int, dtype=None) -> Cache:
    """KV caches for attention layers, O(1) conv + recurrent states for DeltaNet layers."""
    dtype = self.dtype if dtype is None else dtype
    return Cache(layers=tuple(layer.init_cache(batch, max_len, dtype) for layer in self.layers),
                 mask=jnp.zeros((batch, max_len), bool), index=jnp.zeros((), jnp.int32))

  def extend(self, input_ids, attention_mask, cache: Cache):
    """Runs T new tokens into the cache at slot `cache.index` -> (float32 logits [B,T,V], cache).

    T > 1 (prefill) runs the DeltaNet layers in chunked form from their cached state; T == 1
    (decode) runs one recurrent step. Positions continue from the real tokens already cached.
    """
    b, t = input_ids.shape
    max_len = cache.mask.shape[1]
    index = cache.index
    slot_mask = jax.lax.dynamic_update_slice(cache.mask, attention_mask.astype(bool), (0, index))
    positions = jax.lax.dynamic_slice(default_positions(slot_mask), (0, index), (b, t))
    causal = jnp.arange(max_len)[None, :] <= (index + jnp.arange(t))[:, None]  # [T,S]
    ctx = Context(positions=positions, token_mask=attention_mask.astype(bool),
                  attn_mask=causal[None] & slot_mask[:, None, :], cache_index=index)
    x, layer_caches = self._run_layers(input_ids, ctx, cache.layers)
    return self.logits(x), Cache(layers=layer_caches, mask=slot_mask, index=index + t)

  def _run_layers(self, input_ids, ctx, layer_caches):
    x = jnp.take(self.embed[...], input_ids, axis=0)
    new_caches = []
    for i, layer in enumerate(self.layers):
      x, c = layer(x, ctx, None if layer_caches is None else layer_caches[i])
      new_caches.append(c)
    return self.final_norm(x), (None if layer_caches is None else tuple(new_caches))
