"""Gated DeltaNet: chunked form == recurrent form == a plain NumPy loop; conv step == full conv."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from lib.models import preset
from lib.models.qwen3_5 import deltanet
from lib.models.qwen.model import Context


_recurrent = jax.jit(deltanet.delta_rule_recurrent)
_chunked = jax.jit(deltanet.delta_rule_chunked, static_argnames="chunk")


@nnx.jit
def _run_layer(layer, x, mask, cache=None):
  ctx = Context(positions=None, token_mask=mask, attn_mask=None, cache_index=None)
  return layer(x, ctx, cache)


def _inputs(seed, b=2, t=37, h=3, dk=5, dv=4):
  rng = np.random.default_rng(seed)
  f32 = lambda a: jnp.asarray(a, jnp.float32)
  q = deltanet.l2_normalize(f32(rng.normal(size=(b, t, h, dk)))) * dk ** -0.5
  k = deltanet.l2_normalize(f32(rng.normal(size=(b, t, h, dk))))
  v = f32(rng.normal(size=(b, t, h, dv)))
  g = -f32(rng.uniform(0.0, 3.0, size=(b, t, h)))
  beta = f32(rng.uniform(size=(b, t, h)))
  state = f32(rng.normal(size=(b, h, dk, dv)))
  return q, k, v, g, beta, state


def _numpy_delta_rule(q, k, v, g, beta, state):
  """The recurrence exactly as written in the module docstring, one head and token at a time."""
  q, k, v, g, beta, s = (np.asarray(a, np.float64) for a in (q, k, v, g, beta, state))
  b, t, h, _ = q.shape
  out = np.zeros(v.shape)
  s = s.copy()
  for bi in range(b):
    for hi in range(h):
      for ti in range(t):
        decayed = np.exp(g[bi, ti, hi]) * s[bi, hi]
        delta = beta[bi, ti, hi] * (v[bi, ti, hi] - decayed.T @ k[bi, ti, hi])
        s[bi, hi] = decayed + np.outer(k[bi, ti, hi], delta)
        out[bi, ti, hi] = s[bi, hi].T @ q[bi, ti, hi]
  return out, s


@pytest.mark.parametrize("chunk", [1, 8, 16, 64])
def test_chunked_equals_recurrent_and_numpy(chunk):
  args = _inputs(0)
  want_out, want_state = _numpy_delta_rule(*args)
  rec_out, rec_state = _recurrent(*args)
  chk_out, chk_state = _chunked(*args, chunk=chunk)
  np.testing.assert_allclose(rec_out, want_out, atol=2e-5)
  np.testing.assert_allclose(rec_state, want_state, atol=2e-5)
  np.testing.assert_allclose(chk_out, want_out, atol=2e-5)
  np.testing.assert_allclose(chk_state, want_state, atol=2e-5)


def test_zero_gate_and_beta_steps_are_identity():
  q, k, v, g, beta, state = _inputs(1, t=20)
  hole = np.zeros(20, bool)
  hole[5:9] = True  # four steps that must neither decay nor write the state
  g_hole = jnp.where(hole[None, :, None], 0.0, g)
  beta_hole = jnp.where(hole[None, :, None], 0.0, beta)
  keep = ~hole
  _, full_state = _chunked(q, k, v, g_hole, beta_hole, state, chunk=8)
  _, cut_state = _recurrent(q[:, keep], k[:, keep], v[:, keep], g[:, keep],
                                               beta[:, keep], state)
  np.testing.assert_allclose(full_state, cut_state, atol=2e-5)


def test_strong_decay_stays_finite():
  q, k, v, g, beta, state = _inputs(2, t=64)
  out, s = _chunked(q, k, v, g * 40.0, beta, state, chunk=64)  # exp(-120·t) underflows
  want_out, want_state = _numpy_delta_rule(q, k, v, g * 40.0, beta, state)
  assert np.isfinite(np.asarray(out)).all() and np.isfinite(np.asarray(s)).all()
  np.testing.assert_allclose(out, want_out, atol=2e-5)
  np.testing.assert_allclose(s, want_state, atol=2e-5)


def test_causal_conv_in_pieces_equals_whole():
  rng = np.random.default_rng(3)
  x = jnp.asarray(rng.normal(size=(2, 11, 6)), jnp.float32)
  kernel = jnp.asarray(rng.normal(size=(4, 6)), jnp.float32)
  zeros = jnp.zeros((2, 3, 6), jnp.float32)
  whole, whole_state = deltanet.causal_conv(x, kernel, zeros)
  # Independent reference: zero-padded correlation per channel.
  padded = np.concatenate([np.zeros((2, 3, 6)), np.asarray(x)], axis=1)
  ref = np.stack([sum(padded[:, t + j] * np.asarray(kernel)[j] for j in range(4))
                  for t in range(11)], axis=1)
  np.testing.assert_allclose(whole, jax.nn.silu(ref), atol=1e-5)
  first, state = deltanet.causal_conv(x[:, :7], kernel, zeros)
  outs = [first]
  for t in range(7, 11):
    step, state = deltanet.causal_conv(x[:, t:t + 1], kernel, state)
    outs.append(step)
  np.testing.assert_allclose(jnp.concatenate(outs, axis=1), whole, atol=1e-6)
  np.testing.assert_allclose(state, whole_state, atol=0)


def test_layer_prefill_then_steps_equals_one_pass():
  """The layer's cached path (chunked prefill, then one recurrent step per token) equals one pass."""
  config = preset("qwen3.5-tiny", deltanet_chunk=4)
  layer = deltanet.GatedDeltaNet(config, dtype=jnp.float32, rngs=nnx.Rngs(0))
  x = jnp.asarray(np.random.default_rng(4).normal(size=(2, 13, config.hidden_size)), jnp.float32)
  ones = lambda t: jnp.ones((2, t), bool)
  whole, none = _run_layer(layer, x, ones(13))
  assert none is None
  out, cache = _run_layer(layer, x[:, :9], ones(9), layer.init_cache(2, 0, jnp.float32))
  outs = [out]
  for t in range(9, 13):
    out, cache = _run_layer(layer, x[:, t:t + 1], ones(1), cache)
    outs.append(out)
  np.testing.assert_allclose(jnp.concatenate(outs, axis=1), whole, atol=2e-5)


def test_left_padding_is_invisible():
  config = preset("qwen3.5-tiny", deltanet_chunk=4)
  layer = deltanet.GatedDeltaNet(config, dtype=jnp.float32, rngs=nnx.Rngs(1))
  x = jnp.asarray(np.random.default_rng(5).normal(size=(1, 9, config.hidden_size)), jnp.float32)
  padded = jnp.concatenate([jnp.full((1, 5, config.hidden_size), 7.0), x], axis=1)
  mask = jnp.asarray([[False] * 5 + [True] * 9])
  plain, _ = _run_layer(layer, x, jnp.ones((1, 9), bool))
  with_pad, _ = _run_layer(layer, padded, mask)
  np.testing.assert_allclose(with_pad[:, 5:], plain, atol=2e-5)
