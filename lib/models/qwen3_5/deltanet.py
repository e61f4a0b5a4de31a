"""Gated DeltaNet (linear attention with a gated delta-rule state), as in Qwen3.5's linear layers.

Per value head, with a state S [Dk, Dv], decay g_t <= 0 (log space), write strength beta_t in (0,1),
L2-normalised key k_t and query q_t (q scaled by Dk^-1/2):
    S_t = exp(g_t) S_{t-1} + k_t delta_t^T,   delta_t = beta_t (v_t - exp(g_t) S_{t-1}^T k_t)
    o_t = S_t^T q_t
Two exact forms of the same recurrence:
  `delta_rule_recurrent`: one step per token (`lax.scan` over time), the sampler's O(1) decode step.
  `delta_rule_chunked`: chunks of C tokens; inside a chunk the C coupled delta updates are one
    unit-lower-triangular solve (the WY form), and only the state crosses chunks (`lax.scan` over
    chunks). Used for training and prefill.
A decode cache per layer replaces the KV cache: the last K-1 conv inputs and the state S.

Shapes: B batch, T tokens, H value heads, Dk/Dv key/value head dims, C chunk, N chunks.
"""
import flax.struct
import jax
import jax.numpy as jnp
from flax import nnx

from lib.models.layers import COLUMNS, ROWS, Dense, FusedDense, sharded_param


@flax.struct.dataclass
class DeltaNetCache:
  """Decode state of one Gated DeltaNet layer: conv inputs [B,K-1,conv_dim], state [B,H,Dk,Dv] f32."""
  conv: jax.Array
  state: jax.Array


def l2_normalize(x, eps=1e-6):
  """x / sqrt(sum(x^2) + eps) over the last axis (the eps placement transformers and FLA use).

  Args:
    x: [..., D].
    eps: added under the square root.

  Returns:
    [..., D], same dtype.
  """
  return x * jax.lax.rsqrt(jnp.sum(x * x, axis=-1, keepdims=True) + eps)


def delta_rule_recurrent(q, k, v, g, beta, state):
  """Token-by-token gated delta rule, all float32.

  Args:
    q, k: [B,T,H,Dk], L2-normalised, q pre-scaled by Dk^-1/2.
    v: [B,T,H,Dv].
    g: [B,T,H] log decay (<= 0); beta: [B,T,H] write strength in (0, 1).
    state: [B,H,Dk,Dv] the incoming state.

  Returns:
    (out [B,T,H,Dv], final state [B,H,Dk,Dv]).
  """
  def step(s, xs):
    q_t, k_t, v_t, g_t, b_t = xs
    s = s * jnp.exp(g_t)[..., None, None]
    predicted = jnp.einsum("bhkv,bhk->bhv", s, k_t)
    delta = b_t[..., None] * (v_t - predicted)
    s = s + k_t[..., :, None] * delta[..., None, :]
    return s, jnp.einsum("bhkv,bhk->bhv", s, q_t)

  time_major = [jnp.moveaxis(a, 1, 0) for a in (q, k, v, g, beta)]
  state, out = jax.lax.scan(step, state, time_major)
  return jnp.moveaxis(out, 0, 1), state


def delta_rule_chunked(q, k, v, g, beta, state, chunk: int):
  """Chunk-parallel gated delta rule; same result as `delta_rule_recurrent`.

  Args:
    q, k, v, g, beta, state: as in `delta_rule_recurrent`.
    chunk: C, the chunk length; T is padded up to a multiple of it with identity steps.

  Returns:
    (out [B,T,H,Dv], final state [B,H,Dk,Dv]).

  Within a chunk with cumulative decay G_i = g_1 + ... + g_i and incoming state S0, unrolling the
  recurrence gives (I + A) delta = beta*v - beta*exp(G)*K S0 with A_ij = beta_i exp(G_i - G_j) k_i.k_j
  for j < i, so delta = U - W S0 with U, W from one triangular solve that does not depend on S0.
  Then o_i = exp(G_i) q_i S0 + sum_{j<=i} exp(G_i - G_j) (q_i.k_j) delta_j and the outgoing state
  is exp(G_C) S0 + sum_j exp(G_C - G_j) k_j delta_j^T. Padding steps have g = beta = 0: identity.
  """
  b, t, h, dk = k.shape
  dv = v.shape[-1]
  pad = (-t) % chunk
  if pad:
    q, k, v = (jnp.pad(a, ((0, 0), (0, pad), (0, 0), (0, 0))) for a in (q, k, v))
    g, beta = (jnp.pad(a, ((0, 0), (0, pad), (0, 0))) for a in (g, beta))
  n = (t + pad) // chunk
  # -> [B,H,N,C,...]
  q, k, v = (a.reshape(b, n, chunk, h, -1).transpose(0, 3, 1, 2, 4) for a in (q, k, v))
  g, beta = (a.reshape(b, n, chunk, h).transpose(0, 3, 1, 2) for a in (g, beta))

  cum = jnp.cumsum(g, axis=-1)  # G_i
  causal = jnp.tril(jnp.ones((chunk, chunk), bool))
  strict = jnp.tril(jnp.ones((chunk, chunk), bool), -1)
  gap = cum[..., :, None] - cum[..., None, :]  # G_i - G_j, positive above the diagonal: mask first
  decay = jnp.where(causal, jnp.exp(jnp.where(causal, gap, 0.0)), 0.0)
  kk = jnp.einsum("...id,...jd->...ij", k, k)
  a = jnp.where(strict, beta[..., :, None] * kk * decay, 0.0)
  system = a + jnp.eye(chunk, dtype=a.dtype)
  rhs = jnp.concatenate([beta[..., None] * v, (beta * jnp.exp(cum))[..., None] * k], axis=-1)
  solved = jax.scipy.linalg.solve_triangular(system, rhs, lower=True, unit_diagonal=True)
  u, w = solved[..., :dv], solved[..., dv:]
  intra = jnp.where(causal, jnp.einsum("...id,...jd->...ij", q, k) * decay, 0.0)
  q_decayed = q * jnp.exp(cum)[..., None]
  k_to_end = k * jnp.exp(cum[..., -1:] - cum)[..., None]
  chunk_decay = jnp.exp(cum[..., -1])  # [B,H,N]

  def step(s, xs):
    u_n, w_n, q_n, k_n, intra_n, decay_n = xs
    delta = u_n - w_n @ s
    out = q_n @ s + intra_n @ delta
    s = s * decay_n[..., None, None] + jnp.swapaxes(k_n, -1, -2) @ delta
    return s, out

  chunk_major = [jnp.moveaxis(x, 2, 0) for x in (u, w, q_decayed, k_to_end, intra, chunk_decay)]
  state, out = jax.lax.scan(step, state, chunk_major)  # out [N,B,H,C,Dv]
  out = out.transpose(1, 0, 3, 2, 4).reshape(b, n * chunk, h, dv)
  return out[:, :t], state


def causal_conv(x, kernel, state):
  """Depthwise causal conv1d continuing from `state`, then SiLU.

  Args:
    x: [B,T,C] new inputs.
    kernel: [K,C]; tap K-1 multiplies the current token.
    state: [B,K-1,C] the previous inputs (zeros at sequence start).

  Returns:
    (silu(conv) [B,T,C], the last K-1 inputs [B,K-1,C] as the new state).
  """
  taps, t = kernel.shape[0], x.shape[1]
  window = jnp.concatenate([state.astype(x.dtype), x], axis=1)  # [B,T+K-1,C]
  out = sum(window[:, j:j + t] * kernel[j] for j in range(taps))
  return jax.nn.silu(out), window[:, t:]


class GatedRMSNorm(nnx.Module):
  """rms_norm(x) * scale * silu(gate): statistics in float32, scale applied in the input dtype."""

  def __init__(self, dim, eps, *, dtype):
    self.scale = sharded_param(jnp.ones((dim,), dtype), (None,))
    self.eps = eps

  def __call__(self, x, gate):
    x32 = x.astype(jnp.float32)
    x32 = x32 * jax.lax.rsqrt(jnp.mean(x32 * x32, axis=-1, keepdims=True) + self.eps)
    y = self.scale[...] * x32.astype(x.dtype)
    return (y * jax.nn.silu(gate.astype(jnp.float32))).astype(x.dtype)


class GatedDeltaNet(nnx.Module):
  """Qwen3.5 linear-attention token mixer; the same layer protocol as
  `lib.models.attention.GroupedQueryAttention`."""

  def __init__(self, config, *, dtype, rngs):
    c = config
    self.num_k_heads, self.num_v_heads = c.linear_num_key_heads, c.linear_num_value_heads
    self.k_dim, self.v_dim = c.linear_key_head_dim, c.linear_value_head_dim
    self.chunk = c.deltanet_chunk
    widths, groups = self.in_proj_columns(c)
    self.conv_dim, value_dim = widths[0], widths[1]
    h = c.hidden_size
    # The checkpoint's in_proj_qkv, in_proj_z, in_proj_b and in_proj_a as one matmul.
    self.in_proj = FusedDense(h, widths, groups, bias=False, sharding=COLUMNS, dtype=dtype,
                              rngs=rngs)
    taps = c.linear_conv_kernel
    bound = taps ** -0.5  # torch Conv1d's default init range for a depthwise kernel
    self.conv_kernel = sharded_param(
        jax.random.uniform(rngs.params(), (taps, self.conv_dim), dtype, -bound, bound), (None, None))
    self.dt_bias = sharded_param(jnp.ones((self.num_v_heads,), dtype), (None,))
    # A in [0.01, 16] as transformers initialises it; decay rate exp(A_log) per value head.
    self.a_log = sharded_param(jnp.log(jax.random.uniform(
        rngs.params(), (self.num_v_heads,), jnp.float32, 0.01, 16.0)).astype(dtype), (None,))
    self.norm = GatedRMSNorm(self.v_dim, c.rms_norm_eps, dtype=dtype)
    self.out_proj = Dense(value_dim, h, bias=False, sharding=ROWS, dtype=dtype, rngs=rngs)

  @staticmethod
  def in_proj_columns(config) -> tuple[tuple[int, int, int, int], int]:
    """(widths, groups) of `in_proj`, one block each: the conv's mixed q/k/v (2 x key dim + value
    dim), the output gate z (value dim), then beta and the decay a (one per value head)."""
    key_dim = config.linear_num_key_heads * config.linear_key_head_dim
    value_dim = config.linear_num_value_heads * config.linear_value_head_dim
    heads = config.linear_num_value_heads
    return (2 * key_dim + value_dim, value_dim, heads, heads), 1

  def init_cache(self, batch, max_len, dtype) -> DeltaNetCache:
    """An empty DeltaNet cache, O(1) in the sequence length.

    Args:
      batch: B rows. max_len: unused. dtype: of the conv state.

    Returns:
      DeltaNetCache: conv [B, kernel - 1, conv_dim] of `dtype` (zeros) and recurrent state
      [B, num_v_heads, k_dim, v_dim] float32 (zeros).
    """
    del max_len  # the state is O(1) in the sequence length
    taps = self.conv_kernel.shape[0]
    return DeltaNetCache(
        conv=jnp.zeros((batch, taps - 1, self.conv_dim), dtype),
        state=jnp.zeros((batch, self.num_v_heads, self.k_dim, self.v_dim), jnp.float32))

  def __call__(self, x, ctx, cache: DeltaNetCache | None = None):
    """x [B,T,hidden]; ctx.token_mask marks real tokens: padding neither shifts information into
    the state (its inputs are zeroed, as transformers does) nor decays or writes it (g = beta = 0).
    Padding is expected on the left of a prompt, as the sampler lays prompts out."""
    b, t, _ = x.shape
    mask = ctx.token_mask
    x = x * mask[..., None].astype(x.dtype)
    if cache is None:
      cache = self.init_cache(b, 0, x.dtype)
      keep_cache = False
    else:
      keep_cache = True
    mixed, z, beta_logit, decay_logit = self.in_proj(x)
    mixed, conv_state = causal_conv(mixed, self.conv_kernel[...], cache.conv)
    key_dim = self.num_k_heads * self.k_dim
    q, k, v = jnp.split(mixed, [key_dim, 2 * key_dim], axis=-1)
    groups = self.num_v_heads // self.num_k_heads  # each key head serves `groups` adjacent v heads
    q = jnp.repeat(q.reshape(b, t, self.num_k_heads, self.k_dim), groups, axis=2)
    k = jnp.repeat(k.reshape(b, t, self.num_k_heads, self.k_dim), groups, axis=2)
    v = v.reshape(b, t, self.num_v_heads, self.v_dim).astype(jnp.float32)
    q = l2_normalize(q.astype(jnp.float32)) * self.k_dim ** -0.5
    k = l2_normalize(k.astype(jnp.float32))
    live = mask.astype(jnp.float32)[..., None]
    beta = jax.nn.sigmoid(beta_logit.astype(jnp.float32)) * live
    g = -jnp.exp(self.a_log[...].astype(jnp.float32)) * jax.nn.softplus(
        decay_logit.astype(jnp.float32) + self.dt_bias[...].astype(jnp.float32)) * live
    if t == 1:
      out, state = delta_rule_recurrent(q, k, v, g, beta, cache.state)
    else:
      out, state = delta_rule_chunked(q, k, v, g, beta, cache.state, self.chunk)
    z = z.reshape(b, t, self.num_v_heads, self.v_dim)
    out = self.norm(out.astype(x.dtype), z).reshape(b, t, -1)
    new_cache = DeltaNetCache(conv=conv_state.astype(cache.conv.dtype), state=state)
    return self.out_proj(out), (new_cache if keep_cache else None)
