"""lib/rl/jsd.py: generalized JSD against NumPy/SciPy, its alpha limits, masking, gradients."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads
from scipy.special import log_softmax, rel_entr

from lib.rl import jsd as distill


def np_gjsd(s, t, mask, alpha, temp):
  ls, lt = log_softmax(s / temp, -1), log_softmax(t / temp, -1)
  ps, pt = np.exp(ls), np.exp(lt)
  if alpha == 0:
    per = rel_entr(pt, ps).sum(-1)
  elif alpha == 1:
    per = rel_entr(ps, pt).sum(-1)
  else:
    m = alpha * pt + (1 - alpha) * ps
    per = alpha * rel_entr(pt, m).sum(-1) + (1 - alpha) * rel_entr(ps, m).sum(-1)
  return (per * mask).sum() / mask.sum()


def _inputs(seed=0, B=3, T=5, V=13):
  rng = np.random.default_rng(seed)
  s = rng.normal(0, 2, (B, T, V))
  t = rng.normal(0, 2, (B, T, V))
  mask = (rng.uniform(size=(B, T)) < 0.6).astype(np.float64)
  mask[0, 0] = 1
  return s, t, mask


@pytest.mark.parametrize("alpha", [0.0, 0.1, 0.5, 0.9, 1.0])
@pytest.mark.parametrize("temp", [1.0, 0.7])
def test_matches_numpy(alpha, temp):
  s, t, mask = _inputs()
  got = distill.generalized_jsd(jnp.asarray(s, jnp.float32), jnp.asarray(t, jnp.float32),
                                jnp.asarray(mask), alpha=alpha, temperature=temp)
  np.testing.assert_allclose(float(got), np_gjsd(s, t, mask, alpha, temp), rtol=2e-5, atol=1e-6)


def test_endpoint_convention_forward_and_reverse_kl():
  s, t, mask = _inputs(1)
  ls, lt = log_softmax(s, -1), log_softmax(t, -1)
  fwd = (rel_entr(np.exp(lt), np.exp(ls)).sum(-1) * mask).sum() / mask.sum()   # KL(P_T||P_S)
  rev = (rel_entr(np.exp(ls), np.exp(lt)).sum(-1) * mask).sum() / mask.sum()   # KL(P_S||P_T)
  assert abs(fwd - rev) > 1e-2  # the two directions differ on these inputs
  f32 = lambda x: jnp.asarray(x, jnp.float32)
  np.testing.assert_allclose(float(distill.generalized_jsd(f32(s), f32(t), mask, alpha=0.0)), fwd,
                             rtol=1e-5)
  np.testing.assert_allclose(float(distill.generalized_jsd(f32(s), f32(t), mask, alpha=1.0)), rev,
                             rtol=1e-5)


def test_endpoints_are_limits_of_scaled_jsd():
  # JSD_a ~ a KL(T||S) as a -> 0 and (1 - a) KL(S||T) as a -> 1.
  s, t, mask = _inputs(2)
  j = lambda a: np_gjsd(s, t, mask, a, 1.0)
  np.testing.assert_allclose(j(1e-5) / 1e-5, j(0.0), rtol=1e-3)
  np.testing.assert_allclose(j(1 - 1e-5) / 1e-5, j(1.0), rtol=1e-3)


def test_half_is_symmetric_and_bounded_by_log2():
  s, t, mask = _inputs(3)
  a = distill.generalized_jsd(jnp.asarray(s), jnp.asarray(t), mask, alpha=0.5)
  b = distill.generalized_jsd(jnp.asarray(t), jnp.asarray(s), mask, alpha=0.5)
  np.testing.assert_allclose(float(a), float(b), rtol=1e-5)
  assert 0 < float(a) <= np.log(2)
  np.testing.assert_allclose(float(distill.generalized_jsd(jnp.asarray(s), jnp.asarray(s), mask)),
                             0.0, atol=1e-6)


def test_masked_positions_get_exactly_zero_gradient_and_masked_equals_sliced():
  s, t, mask = _inputs(4)
  s, t = jnp.asarray(s, jnp.float32), jnp.asarray(t, jnp.float32)
  for alpha in (0.0, 0.5, 1.0):
    g_s, g_t = jax.grad(lambda a, b: distill.generalized_jsd(a, b, mask, alpha=alpha),
                        argnums=(0, 1))(s, t)
    off = ~mask.astype(bool)
    assert np.all(np.asarray(g_s)[off] == 0) and np.all(np.asarray(g_t)[off] == 0)
    assert np.all(np.isfinite(np.asarray(g_s)))
    on = mask.astype(bool)
    sliced = distill.generalized_jsd(s[on][None], t[on][None], jnp.ones((1, on.sum())),
                                     alpha=alpha)
    np.testing.assert_allclose(float(distill.generalized_jsd(s, t, mask, alpha=alpha)),
                               float(sliced), rtol=1e-5)


def test_gradients_match_finite_differences():
  s, t, mask = _inputs(5, B=2, T=3, V=5)
  f = lambda a: distill.generalized_jsd(a, jnp.asarray(t, jnp.float32), mask, alpha=0.5)
  check_grads(f, (jnp.asarray(s, jnp.float32),), order=1, modes=["rev"], eps=1e-2, atol=2e-2,
              rtol=2e-2)


def test_importance_weights_clip_and_detached():
  lp = jnp.array([0.0, 1.0, -1.0])
  w = distill.importance_weights(lp, jnp.zeros(3), clip_max=2.0)
  np.testing.assert_allclose(np.asarray(w), [1.0, 2.0, np.exp(-1.0)], rtol=1e-6)
  g = jax.grad(lambda x: distill.importance_weights(x, jnp.zeros(3)).sum())(lp)
  assert np.all(np.asarray(g) == 0)


def test_bad_alpha_rejected():
  with pytest.raises(ValueError, match="alpha"):
    distill.generalized_jsd(jnp.zeros((1, 1, 2)), jnp.zeros((1, 1, 2)), jnp.ones((1, 1)), alpha=1.5)


@pytest.mark.parametrize("alpha", [0.0, 0.3, 0.5, 1.0])
def test_chunked_jsd_and_its_gradient_equal_the_full_logits(alpha):
  """chunked_jsd_logprobs over chunks of 4 of 15 positions (a padded last chunk) equals
  per_token_generalized_jsd and token log-probs of the full [B, T, V] logits, values and
  gradients into the student's hidden states and head (float32 within 1e-6; bfloat16 loosely),
  and matches the NumPy reference."""
  rng = np.random.default_rng(4)
  hs, ht = (jnp.asarray(rng.normal(size=(3, 5, 8)), jnp.float32) for _ in range(2))
  ws, wt = (jnp.asarray(rng.normal(size=(8, 13)), jnp.float32) for _ in range(2))
  tokens = jnp.asarray(rng.integers(0, 13, (3, 5)), jnp.int32)
  mask = jnp.asarray(rng.uniform(size=(3, 5)) < 0.6)
  logits = lambda h, w: jnp.matmul(h, w, preferred_element_type=jnp.float32)

  def full(hs_, ws_, ht_, wt_):
    z_s = logits(hs_, ws_)
    per = distill.per_token_generalized_jsd(z_s, logits(ht_, wt_), alpha, 0.8)
    logp = jnp.take_along_axis(jax.nn.log_softmax(z_s / 0.8), tokens[..., None], -1)[..., 0]
    return per, logp

  chunk = lambda hs_, ws_, ht_, wt_: distill.chunked_jsd_logprobs(
      hs_, ws_, ht_, wt_, tokens, alpha=alpha, temperature=0.8, chunk_tokens=4)
  (per_c, lp_c), (per_f, lp_f) = chunk(hs, ws, ht, wt), full(hs, ws, ht, wt)
  np.testing.assert_allclose(per_c, per_f, rtol=1e-6, atol=1e-7)
  np.testing.assert_allclose(lp_c, lp_f, rtol=1e-6, atol=1e-6)
  assert (np.asarray(lp_c) <= 0).all()
  np.testing.assert_allclose(
      float(distill.masked_token_mean(per_c, mask)),
      np_gjsd(np.asarray(logits(hs, ws), np.float64), np.asarray(logits(ht, wt), np.float64),
              np.asarray(mask, np.float64), alpha, 0.8), rtol=1e-5)
  obj = lambda f: lambda *a: distill.masked_token_mean(f(*a)[0] + 0.1 * f(*a)[1], mask)
  g_c = jax.grad(obj(chunk), (0, 1))(hs, ws, ht, wt)
  g_f = jax.grad(obj(full), (0, 1))(hs, ws, ht, wt)
  for a, b in zip(g_c, g_f):
    np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
  assert np.all(np.asarray(g_c[0])[~np.asarray(mask)] == 0.0)    # masked positions: zero
  bf = lambda *a: [x.astype(jnp.bfloat16) for x in a]
  np.testing.assert_allclose(obj(chunk)(*bf(hs, ws, ht, wt)), obj(full)(*bf(hs, ws, ht, wt)),
                             rtol=1e-2, atol=1e-3)
