"""Qwen3.5 hybrid decoder (text) in Flax NNX: Gated DeltaNet layers interleaved with gated attention.

Shapes: B batch, T new tokens, S cache slots, H query heads, K kv heads, D head_dim.

The model is a `lib.models.qwen.model.Qwen` with another layer stack, so the sampler drives it
unchanged: full-attention layers keep a `KVCache`, linear layers a `DeltaNetCache` (conv inputs +
state).
Differences from Qwen3 that matter for exactness:
  * every RMSNorm outside the DeltaNet is zero-centred: x/rms(x) * (1 + w), product in float32;
  * the query projection (the checkpoint's q_proj) emits, per head, the query followed by an output
    gate; attention output * sigmoid(gate);
  * RoPE rotates only the first `rotary_dim = head_dim * partial_rotary_factor` channels.
"""
import jax
import jax.numpy as jnp
from flax import nnx

from lib.models.attention import Context, GroupedQueryAttention, rope
from lib.models.layers import MLP, sharded_param
from lib.models.qwen.model import Qwen
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


class GatedAttention(GroupedQueryAttention):
  """GQA softmax attention with q/k zero-centred RMSNorm, partial RoPE and a sigmoid output gate."""

  def __init__(self, config: Qwen35Config, *, dtype, rngs):
    c = config
    # Per query head: [query (D) | gate (D)], the layout of the checkpoint's q_proj rows.
    super().__init__(c, query_width=2 * c.head_dim, qkv_bias=c.attention_bias,
                     o_bias=c.attention_bias, dtype=dtype, rngs=rngs)
    self.rope_theta, self.rotary_dim = c.rope_theta, c.rotary_dim
    self.q_norm = ZeroCentredRMSNorm(c.head_dim, c.rms_norm_eps, dtype=dtype)
    self.k_norm = ZeroCentredRMSNorm(c.head_dim, c.rms_norm_eps, dtype=dtype)

  def __call__(self, x, ctx: Context, cache=None):
    b, t, _ = x.shape
    q_and_gate, k, v = self.project(x)
    q, gate = jnp.split(q_and_gate, 2, axis=-1)
    q, k = self.q_norm(q), self.k_norm(k)
    q = rope(q, ctx.positions, self.rope_theta, self.rotary_dim)
    k = rope(k, ctx.positions, self.rope_theta, self.rotary_dim)
    out, cache = self.attend_cached(q, k, v, ctx, cache)
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

  norm_class = ZeroCentredRMSNorm

  def build_layers(self, config: Qwen35Config, *, dtype, rngs) -> list:
    """The hybrid layers, one per `config.layer_types` entry, random.

    Args:
      config: the model's config. dtype, rngs: as `lib.models.layers.Dense`.
    Returns:
      A list of HybridDecoderLayer.
    """
    return [HybridDecoderLayer(config, kind, dtype=dtype, rngs=rngs) for kind in config.layer_types]
