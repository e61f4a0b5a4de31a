"""Qwen2/Qwen2.5/Qwen3 decoder in Flax NNX.

Shapes: B batch, T new tokens, S cache slots, H query heads, K kv heads, G = H/K, D head_dim.

Every layer follows one protocol so other layer types (e.g. linear attention in a hybrid model) can
sit in the same stack:
  layer.init_cache(batch, max_len, dtype) -> a pytree holding that layer's decode state
  layer(x [B,T,hidden], ctx: Context, cache | None) -> (x, cache | None)
The model-level `Cache` holds one such pytree per layer plus the slot mask and write index that all
layers share.

Parameters carry `out_sharding` names for the "model" axis of `lib.parallel.sharding.make_mesh`'s
mesh: column-parallel projections shard their output features on "model", row-parallel ones their
input features; `lib.parallel.placement` places them.
"""
import flax.struct
import jax
import jax.numpy as jnp
from flax import nnx

from lib.models import remat as remat_lib
from lib.models.attention import Context, GroupedQueryAttention, rope
from lib.models.layers import COLUMNS, MLP, ROWS, WEIGHT_INIT, Dense, sharded_param
from lib.models.qwen.config import QwenConfig


class RMSNorm(nnx.Module):
  """x / rms(x) * scale, statistics in float32 and the product in the input dtype (as transformers)."""

  def __init__(self, dim, eps, *, dtype):
    self.scale = sharded_param(jnp.ones((dim,), dtype), (None,))
    self.eps = eps

  def __call__(self, x):
    x32 = x.astype(jnp.float32)
    x32 = x32 * jax.lax.rsqrt(jnp.mean(x32 * x32, axis=-1, keepdims=True) + self.eps)
    return self.scale[...] * x32.astype(x.dtype)


@flax.struct.dataclass
class Cache:
  """Decode state of the whole stack: per-layer states, slot mask [B,S] bool, next slot (int32)."""
  layers: tuple
  mask: jax.Array
  index: jax.Array


class Attention(GroupedQueryAttention):
  """GQA softmax attention with optional q/k RMSNorm (Qwen3) and RoPE over all channels."""

  def __init__(self, config: QwenConfig, *, dtype, rngs):
    c = config
    super().__init__(c, query_width=c.head_dim, qkv_bias=c.qkv_bias, o_bias=c.o_bias, dtype=dtype,
                     rngs=rngs)
    self.rope_theta = c.rope_theta
    self.q_norm = RMSNorm(c.head_dim, c.rms_norm_eps, dtype=dtype) if c.qk_norm else None
    self.k_norm = RMSNorm(c.head_dim, c.rms_norm_eps, dtype=dtype) if c.qk_norm else None

  def __call__(self, x, ctx: Context, cache=None):
    b, t, _ = x.shape
    q, k, v = self.project(x)
    if self.q_norm is not None:
      q, k = self.q_norm(q), self.k_norm(k)
    q, k = rope(q, ctx.positions, self.rope_theta), rope(k, ctx.positions, self.rope_theta)
    out, cache = self.attend_cached(q, k, v, ctx, cache)
    return self.o_proj(out.reshape(b, t, -1)), cache


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

  norm_class = RMSNorm  # the final norm's type (`Qwen35` overrides it with its layer stack)

  def __init__(self, config: QwenConfig, *, rngs: nnx.Rngs, dtype=jnp.float32):
    self.config = config
    self.dtype = jnp.dtype(dtype)
    self.embed = sharded_param(
        WEIGHT_INIT(rngs.params(), (config.vocab_size, config.hidden_size), dtype), ROWS)
    self.layers = nnx.List(self.build_layers(config, dtype=dtype, rngs=rngs))
    self.final_norm = self.norm_class(config.hidden_size, config.rms_norm_eps, dtype=dtype)
    self.lm_head = None if config.tie_word_embeddings else Dense(
        config.hidden_size, config.vocab_size, bias=False, sharding=COLUMNS, dtype=dtype, rngs=rngs)

  def build_layers(self, config: QwenConfig, *, dtype, rngs) -> list:
    """The decoder layers, first to last, random (the hook a family with another stack overrides).

    Args:
      config: the model's config. dtype, rngs: as `lib.models.layers.Dense`.
    Returns:
      A list of layers that follow the per-layer protocol (module docstring).
    """
    return [DecoderLayer(config, dtype=dtype, rngs=rngs) for _ in range(config.num_layers)]

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
    return jnp.matmul(hidden, self.head_weight(), preferred_element_type=jnp.float32)

  def head_weight(self):
    """The output head's [hidden_size, V] weight: the transposed embedding when tied, else
    lm_head's kernel (what `lib.models.chunked` projects chunk by chunk)."""
    return self.embed[...].T if self.lm_head is None else self.lm_head.kernel[...]

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
