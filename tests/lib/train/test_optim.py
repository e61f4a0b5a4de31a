"""lib/train/optim.py: schedule shape, decay mask, and accumulation == full batch."""
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from lib.train import optim


def test_warmup_then_cosine_values():
  s = optim.lr_schedule(1.0, total_steps=100, warmup_frac=0.1, schedule="cosine")
  np.testing.assert_allclose([float(s(0)), float(s(5)), float(s(10))], [0.0, 0.5, 1.0], atol=1e-6)
  # halfway through the 90 decay steps cosine is at 0.5
  np.testing.assert_allclose(float(s(55)), 0.5, atol=1e-6)
  np.testing.assert_allclose(float(s(100)), 0.0, atol=1e-6)
  c = optim.lr_schedule(0.3, 10, 0.0, "constant")
  assert float(c(0)) == pytest.approx(0.3) and float(c(9)) == pytest.approx(0.3)
  with pytest.raises(ValueError, match="unknown schedule"):
    optim.lr_schedule(1.0, 10, schedule="step")


def test_warmup_stable_decay_values():
  # 100 steps: 10 warm-up, stable at lr until step 70, cosine to 0.1 lr over the last 30
  s = optim.lr_schedule(2.0, total_steps=100, warmup_frac=0.1, schedule="wsd", final_frac=0.1,
                        decay_frac=0.3)
  got = [float(s(t)) for t in (0, 5, 10, 40, 70, 85, 100)]
  mid = 2.0 * (0.1 + 0.9 * (1 + np.cos(np.pi * 15 / 30)) / 2)
  np.testing.assert_allclose(got, [0.0, 1.0, 2.0, 2.0, 2.0, mid, 0.2], atol=1e-6)
  assert mid == pytest.approx(1.1)
  # no warm-up: stable from step 0
  s0 = optim.lr_schedule(1.0, 10, schedule="wsd", decay_frac=0.5)
  np.testing.assert_allclose([float(s0(t)) for t in (0, 4, 5, 10)], [1.0, 1.0, 1.0, 0.0],
                             atol=1e-6)
  with pytest.raises(ValueError, match="decay_frac"):
    optim.lr_schedule(1.0, 10, warmup_frac=0.5, schedule="wsd", decay_frac=0.6)


def test_adamw_matches_hand_computed_first_step_with_decay_mask():
  params = {"w": jnp.ones((2, 2)), "b": jnp.ones((2,))}
  grads = {"w": jnp.full((2, 2), 0.5), "b": jnp.full((2,), -0.5)}
  tx = optim.adamw(lr=0.1, total_steps=10, schedule="constant", weight_decay=0.1, clip_norm=None)
  upd, _ = tx.update(grads, tx.init(params), params)
  # Adam's first step is -lr * sign(g) (bias-corrected m/sqrt(v) = +-1); decay on "w" only.
  np.testing.assert_allclose(np.asarray(upd["w"]), -0.1 * (1 + 0.1 * 1.0), rtol=1e-5)
  np.testing.assert_allclose(np.asarray(upd["b"]), 0.1, rtol=1e-5)


def np_adamw_clipped(grads, p, lr, wd, clip, b1=0.9, b2=0.999, eps=1e-8):
  m = np.zeros_like(p)
  v = np.zeros_like(p)
  for k, g in enumerate(grads, start=1):
    norm = np.sqrt((g ** 2).sum())
    g = g * min(1.0, clip / norm)
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g ** 2
    mhat, vhat = m / (1 - b1 ** k), v / (1 - b2 ** k)
    p = p - lr * (mhat / (np.sqrt(vhat) + eps) + wd * p)
  return p


def test_clip_then_adamw_matches_numpy_over_steps():
  grads = [np.array([[30.0, 40.0]]), np.array([[0.3, -0.4]]), np.array([[-2.0, 0.1]])]
  p0 = np.array([[0.5, -1.0]])
  tx = optim.adamw(lr=0.01, total_steps=3, schedule="constant", weight_decay=0.1, clip_norm=1.0)
  p = jnp.asarray(p0, jnp.float32)
  state = tx.init(p)
  for g in grads:
    upd, state = tx.update(jnp.asarray(g, jnp.float32), state, p)
    p = optax.apply_updates(p, upd)
  want = np_adamw_clipped(grads, p0, 0.01, 0.1, 1.0)
  np.testing.assert_allclose(np.asarray(p), want, rtol=1e-5)
  unclipped = np_adamw_clipped(grads, p0, 0.01, 0.1, 1e9)
  assert np.abs(want - unclipped).max() > 1e-4    # the clip is visible after step 1


def test_accumulate_grads_token_weighted_equals_full_batch():
  rng = np.random.default_rng(0)
  x = jnp.asarray(rng.normal(size=(8, 5)), jnp.float32)
  m = jnp.asarray(rng.uniform(size=(8, 5)) < 0.6, jnp.float32)
  w = jnp.asarray(rng.normal(size=(5,)), jnp.float32)

  def loss_sum(p, mb):
    per = (mb["x"] * p) ** 2
    return (per * mb["m"]).sum(), (mb["m"].sum(), {"abs": jnp.abs(p).sum()})

  full = lambda p: (((x * p) ** 2) * m).sum() / m.sum()
  micro = {"x": x.reshape(4, 2, 5), "m": m.reshape(4, 2, 5)}
  loss, grads, met = optim.accumulate_grads(loss_sum, w, micro)
  np.testing.assert_allclose(float(loss), float(full(w)), rtol=1e-6)
  np.testing.assert_allclose(np.asarray(grads), np.asarray(jax.grad(full)(w)), rtol=1e-5)
  np.testing.assert_allclose(float(met["weight"]), float(m.sum()))
  np.testing.assert_allclose(float(met["abs"]), float(jnp.abs(w).sum()), rtol=1e-6)
