"""lib/rl/losses.py against an independent NumPy implementation of GRPO's advantages and loss."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lib.rl import losses as rl


def np_group_adv(r, eps=1e-6, scale=True):
  out = np.empty_like(r, dtype=np.float64)
  for b in range(r.shape[0]):
    row = r[b].astype(np.float64)
    c = row - row.sum() / len(row)
    if scale:
      var = ((row - row.mean()) ** 2).sum() / (len(row) - 1)
      c = c / (np.sqrt(var) + eps)
    out[b] = c
  return out


def np_grpo(logp, old, ref, adv, mask, eps, c, kl_coef, ent, ent_coef, agg):
  B, T = logp.shape
  pg = np.zeros((B, T))
  kl = np.zeros((B, T))
  for b in range(B):
    for t in range(T):
      a = adv[b]
      r = np.exp(min(max(logp[b, t] - old[b, t], -20), 20))
      loss = max(-a * r, -a * min(max(r, 1 - eps), 1 + eps))
      if a < 0:
        loss = min(loss, -a * c)
      pg[b, t] = loss
      d = min(max(ref[b, t] - logp[b, t], -20), 20)
      kl[b, t] = min(max(np.exp(d) - d - 1, -10), 10)

  def reduce(x):
    if agg == "token-mean":
      return (x * mask).sum() / mask.sum()
    vals = []
    for b in range(B):
      n = mask[b].sum()
      if n == 0:
        continue
      s = (x[b] * mask[b]).sum()
      vals.append(s / n if agg == "seq-mean-token-mean" else s)
    return np.mean(vals)

  return reduce(pg) + kl_coef * reduce(kl) - ent_coef * reduce(ent)


def test_group_advantages_matches_numpy():
  r = np.random.default_rng(0).normal(size=(5, 8)).astype(np.float32)
  np.testing.assert_allclose(rl.group_advantages(r), np_group_adv(r), rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(rl.group_advantages(r, scale=False), np_group_adv(r, scale=False),
                             rtol=1e-5, atol=1e-6)


def test_group_advantages_constant_group_is_zero_and_binary_rewards():
  r = np.array([[1, 1, 1, 1], [0, 1, 0, 1]], np.float32)
  a = np.asarray(rl.group_advantages(r))
  assert np.all(a[0] == 0)
  # ddof=1: std of [0,1,0,1] is sqrt(1/3), so the advantages are +-0.5 / sqrt(1/3).
  np.testing.assert_allclose(a[1], np.array([-1, 1, -1, 1]) * 0.5 / (np.sqrt(1 / 3) + 1e-6),
                             rtol=1e-6)


def test_group_advantages_needs_two_members_when_scaling():
  with pytest.raises(ValueError, match="G >= 2"):
    rl.group_advantages(np.ones((3, 1)))
  assert np.all(np.asarray(rl.group_advantages(np.ones((3, 1)), scale=False)) == 0)


@pytest.mark.parametrize("agg", rl.AGGREGATIONS)
def test_grpo_loss_matches_numpy(agg):
  rng = np.random.default_rng(1)
  B, T = 6, 7
  logp = rng.normal(-2, 1, (B, T)).astype(np.float32)
  old = (logp + rng.normal(0, 0.4, (B, T))).astype(np.float32)
  ref = (logp + rng.normal(0, 0.5, (B, T))).astype(np.float32)
  adv = rng.normal(0, 2, (B,)).astype(np.float32)
  ent = rng.uniform(0, 3, (B, T)).astype(np.float32)
  mask = (rng.uniform(size=(B, T)) < 0.7).astype(np.float32)
  mask[2] = 0  # a fully padded row must not change any aggregation
  loss, metrics = rl.grpo_loss(logp, old, ref, adv, mask, clip_eps=0.2, dual_clip_c=3.0,
                               kl_coef=0.05, entropy=ent, entropy_coef=0.01, agg=agg)
  want = np_grpo(logp, old, ref, adv, mask, 0.2, 3.0, 0.05, ent, 0.01, agg)
  np.testing.assert_allclose(float(loss), want, rtol=1e-5, atol=1e-6)
  ratio = np.exp(logp - old)
  unclipped = -adv[:, None] * ratio
  clipped = -adv[:, None] * np.clip(ratio, 0.8, 1.2)
  np.testing.assert_allclose(float(metrics["clip_frac"]),
                             ((clipped > unclipped) * mask).sum() / mask.sum(), rtol=1e-6)
  np.testing.assert_allclose(float(metrics["approx_kl"]), ((old - logp) * mask).sum() / mask.sum(),
                             rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(float(metrics["ratio_mean"]), (ratio * mask).sum() / mask.sum(),
                             rtol=1e-5)


def test_dual_clip_bounds_negative_advantage_loss():
  # A = -1, ratio = e^3 ~ 20: plain PPO loss would be 20; the dual clip caps it at c = 3.
  logp = jnp.array([[0.0]])
  loss, m = rl.grpo_loss(logp, logp - 3.0, logp, jnp.array([-1.0]), jnp.ones((1, 1)), kl_coef=0.0)
  np.testing.assert_allclose(float(loss), 3.0, rtol=1e-6)
  assert float(m["dual_clip_frac"]) == 1.0
  loss, _ = rl.grpo_loss(logp, logp - 3.0, logp, jnp.array([-1.0]), jnp.ones((1, 1)),
                         kl_coef=0.0, dual_clip_c=None)
  np.testing.assert_allclose(float(loss), np.exp(3.0), rtol=1e-5)


def test_grpo_masked_tokens_get_exactly_zero_gradient():
  rng = np.random.default_rng(2)
  B, T = 4, 9
  logp = jnp.asarray(rng.normal(-1, 1, (B, T)), jnp.float32)
  old = logp + 0.1
  ref = logp - 0.3
  mask = jnp.asarray(rng.uniform(size=(B, T)) < 0.5)
  adv = jnp.asarray(rng.normal(size=(B,)), jnp.float32)
  for agg in rl.AGGREGATIONS:
    g = jax.grad(lambda lp: rl.grpo_loss(lp, old, ref, adv, mask, agg=agg)[0])(logp)
    g = np.asarray(g)
    assert np.all(np.isfinite(g))
    assert np.all(g[~np.asarray(mask)] == 0.0)
    assert np.any(g[np.asarray(mask)] != 0.0)


def test_grpo_gradient_on_policy_is_advantage_weighted():
  # At ratio 1 with no KL the gradient of token-mean(-A ratio) w.r.t. logp is -A / n_tokens.
  logp = jnp.zeros((2, 3))
  adv = jnp.array([1.5, -0.5])
  g = jax.grad(lambda lp: rl.grpo_loss(lp, lp * 0, lp * 0, adv, jnp.ones((2, 3)),
                                       kl_coef=0.0)[0])(logp)
  np.testing.assert_allclose(np.asarray(g), -np.repeat(np.asarray(adv)[:, None], 3, 1) / 6,
                             rtol=1e-6)


def test_k3_kl_nonnegative_and_zero_at_equality():
  x = jnp.linspace(-5, 5, 11)
  assert np.all(np.asarray(rl.k3_kl(x, x)) == 0)
  assert np.all(np.asarray(rl.k3_kl(x, x[::-1])) >= 0)


def test_token_entropy_matches_numpy():
  logits = np.random.default_rng(3).normal(size=(2, 3, 11)).astype(np.float32)
  p = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
  np.testing.assert_allclose(rl.token_entropy(logits), -(p * np.log(p)).sum(-1), rtol=1e-5)


def test_unknown_aggregation_rejected():
  with pytest.raises(ValueError, match="unknown agg"):
    rl.grpo_loss(jnp.zeros((1, 1)), jnp.zeros((1, 1)), jnp.zeros((1, 1)), jnp.zeros(1),
                 jnp.ones((1, 1)), agg="sum")


def test_permute_within_group_keeps_each_group_multiset():
  x = np.arange(40, dtype=np.float32).reshape(5, 8)
  y = np.asarray(rl.permute_within_group(x, jax.random.key(3)))
  for row_x, row_y in zip(x, y):
    assert sorted(row_x) == sorted(row_y)
  assert not np.array_equal(x, y)
  # rows are permuted independently, not all with the same permutation
  orders = {tuple(np.argsort(row)) for row in y}
  assert len(orders) > 1
