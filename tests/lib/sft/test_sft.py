"""lib/sft/step.py: causal-LM loss vs NumPy, masking, accumulation, a falling loss, checkpoint
resume."""
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx
from scipy.special import log_softmax

from lib import models
from lib.sft import step as sft
from lib.train import optim
from lib.train.checkpoint import Checkpointer
from lib.train.state import TrainState, nnx_apply_fn


def np_causal_lm(logits, ids, loss_mask):
  lp = log_softmax(logits.astype(np.float64), -1)
  total, n = 0.0, 0
  for b in range(ids.shape[0]):
    for t in range(1, ids.shape[1]):
      if loss_mask[b, t]:
        total -= lp[b, t - 1, ids[b, t]]
        n += 1
  return total / n, n


def test_causal_lm_loss_matches_numpy_with_several_spans():
  rng = np.random.default_rng(0)
  logits = rng.normal(size=(3, 8, 11)).astype(np.float32)
  ids = rng.integers(0, 11, (3, 8))
  loss_mask = np.zeros((3, 8), np.int32)
  loss_mask[0, 2:4] = 1
  loss_mask[0, 6:8] = 1      # a second target span (multi-turn row)
  loss_mask[1, 0:5] = 1      # position 0 is ignored: nothing predicts the first token
  loss, n = sft.causal_lm_loss(logits, ids, loss_mask)
  want, want_n = np_causal_lm(logits, ids, loss_mask)
  np.testing.assert_allclose(float(loss), want, rtol=1e-5)
  assert int(n) == want_n == 8


def test_masked_tokens_get_exactly_zero_gradient():
  rng = np.random.default_rng(1)
  logits = jnp.asarray(rng.normal(size=(2, 6, 7)), jnp.float32)
  ids = jnp.asarray(rng.integers(0, 7, (2, 6)))
  loss_mask = jnp.asarray([[0, 0, 1, 1, 0, 0], [0, 1, 0, 0, 0, 1]])
  g = np.asarray(jax.grad(lambda x: sft.causal_lm_loss(x, ids, loss_mask)[0])(logits))
  scored = np.zeros((2, 6), bool)
  scored[:, :-1] = np.asarray(loss_mask)[:, 1:].astype(bool)   # position t-1 scores token t
  assert np.all(g[~scored] == 0) and np.all(np.abs(g[scored]).sum(-1) > 0)


def toy_batch(rng, n, t=12, vocab=128):
  """Prompt of random tokens, then a target that repeats the prompt's first token + EOS."""
  ids = np.zeros((n, t), np.int32)
  attn = np.zeros((n, t), np.int32)
  loss = np.zeros((n, t), np.int32)
  for i in range(n):
    plen = rng.integers(3, 6)
    prompt = rng.integers(10, vocab, plen)
    target = np.array([prompt[0], prompt[0], 3])
    row = np.concatenate([[1], prompt, [2], target])
    ids[i, :len(row)] = row
    attn[i, :len(row)] = 1
    loss[i, len(row) - 3:len(row)] = 1
  return {"input_ids": jnp.asarray(ids), "attention_mask": jnp.asarray(attn),
          "loss_mask": jnp.asarray(loss)}


@pytest.fixture(scope="module")
def setup():
  """One tiny Qwen3, optimizer and jitted accum-2 step shared by the tests (compile once)."""
  model = models.build(models.preset("qwen3-tiny"), rngs=nnx.Rngs(0))
  apply_fn, params = nnx_apply_fn(model)
  tx = optim.adamw(lr=1e-2, total_steps=40, warmup_frac=0.1, schedule="cosine")
  step = jax.jit(sft.make_sft_step(apply_fn, tx, accum_steps=2))
  fresh = lambda: TrainState.create(jax.tree.map(jnp.copy, params), tx)
  return model, apply_fn, tx, step, fresh


def test_tiny_qwen_sft_loss_falls_on_small_corpus(setup):
  _, apply_fn, _, step, fresh = setup
  state = fresh()
  evaluate = jax.jit(sft.make_sft_eval(apply_fn))
  corpus = toy_batch(np.random.default_rng(0), 32)
  rng = np.random.default_rng(1)
  before = float(evaluate(state.params, corpus))
  tokens, want_tokens = 0, 0
  for _ in range(40):
    rows = rng.choice(32, 16, replace=False)
    state, metrics = step(state, jax.tree.map(lambda x: x[rows], corpus))
    tokens += int(metrics["train_tokens"])
    want_tokens += int(np.asarray(corpus["attention_mask"])[rows].sum())  # prompt+target+EOS
  after = float(evaluate(state.params, corpus))
  assert before > 4.0            # ~log(128) at init
  assert after < 0.4 * before, (before, after)
  assert int(state.step) == 40
  assert tokens == want_tokens


def test_accumulation_equals_full_batch_step(setup):
  _, apply_fn, tx, step2, fresh = setup
  batch = toy_batch(np.random.default_rng(1), 8)
  s1, m1 = jax.jit(sft.make_sft_step(apply_fn, tx, accum_steps=1))(fresh(), batch)
  s2, m2 = step2(fresh(), batch)
  np.testing.assert_allclose(float(m1["loss"]), float(m2["loss"]), rtol=1e-5)
  for a, b in zip(jax.tree.leaves(s1.params), jax.tree.leaves(s2.params)):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-6)


def _left_pad(batch):
  """Right-padded toy rows -> the same rows left-padded (answers end at the last column)."""
  out = {k: np.zeros_like(np.asarray(v)) for k, v in batch.items()}
  for i, n in enumerate(np.asarray(batch["attention_mask"]).sum(1)):
    for k, v in batch.items():
      out[k][i, -n:] = np.asarray(v)[i, :n]
  return {k: jnp.asarray(v) for k, v in out.items()}


def test_target_window_step_equals_full_step(setup):
  _, apply_fn, tx, _, fresh = setup
  batch = _left_pad(toy_batch(np.random.default_rng(4), 8))
  full = jax.jit(sft.make_sft_step(apply_fn, tx))(fresh(), batch)
  window = jax.jit(sft.make_sft_step(apply_fn, tx, target_window=3))(fresh(), batch)
  assert float(full[1]["target_tokens"]) == float(window[1]["target_tokens"]) == 24
  np.testing.assert_allclose(float(window[1]["loss"]), float(full[1]["loss"]), rtol=1e-5)
  for a, b in zip(jax.tree.leaves(window[0].params), jax.tree.leaves(full[0].params)):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-6)
  # Too small a window drops target tokens: it must change the loss (the encoder's check).
  short = jax.jit(sft.make_sft_step(apply_fn, tx, target_window=2))(fresh(), batch)
  assert float(short[1]["target_tokens"]) == 16


def test_bfloat16_compute_tracks_float32(setup):
  model, apply_fn, _, _, fresh = setup
  apply_bf16, _ = nnx_apply_fn(model, compute_dtype=jnp.bfloat16)
  batch = toy_batch(np.random.default_rng(2), 8)
  params = fresh().params
  f32 = float(jax.jit(sft.make_sft_eval(apply_fn))(params, batch))
  bf16 = float(jax.jit(sft.make_sft_eval(apply_bf16))(params, batch))
  assert np.isfinite(bf16) and bf16 != f32
  np.testing.assert_allclose(bf16, f32, rtol=2e-2)


def test_checkpoint_resume_is_exact(tmp_path, setup):
  _, _, _, step, fresh = setup
  batches = [toy_batch(np.random.default_rng(i), 4) for i in range(4)]
  straight = fresh()
  for b in batches:
    straight, _ = step(straight, b)
  half = fresh()
  for b in batches[:2]:
    half, _ = step(half, b)
  ckpt = Checkpointer(str(tmp_path / "ckpt"))
  ckpt.save(2, half, metadata={"tokens_seen": 123})
  restored, meta = ckpt.restore(template=fresh())
  assert meta["tokens_seen"] == 123 and meta["step"] == 2 and int(restored.step) == 2
  for b in batches[2:]:
    restored, _ = step(restored, b)
  for a, b in zip(jax.tree.leaves(straight), jax.tree.leaves(restored)):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.parametrize("target_window", [0, 3])
def test_vocabulary_chunked_step_equals_full_logits_step(setup, target_window):
  """loss_chunk_tokens=5 (not a divisor of the 8 x 12 or 8 x 4 scored positions) gives the
  loss, gradient and update of the full-logits step (loss_chunk_tokens=0); plain SGD, so the
  update is the gradient. The chunked loss also equals causal_lm_loss on the hidden states'
  logits with bfloat16 compute, to bfloat16 rounding."""
  model, apply_fn, _, _, _ = setup
  _, params = nnx_apply_fn(model)
  tx = optax.sgd(1e-1)
  batch = _left_pad(toy_batch(np.random.default_rng(5), 8))
  fresh = lambda: TrainState.create(jax.tree.map(jnp.copy, params), tx)
  run = lambda c: jax.jit(sft.make_sft_step(apply_fn, tx, target_window=target_window,
                                            loss_chunk_tokens=c))(fresh(), batch)
  (s_full, m_full), (s_chunk, m_chunk) = run(0), run(5)
  for k in ("loss", "grad_norm", "target_tokens"):
    np.testing.assert_allclose(float(m_chunk[k]), float(m_full[k]), rtol=1e-6)
  for a, b in zip(jax.tree.leaves(s_chunk.params), jax.tree.leaves(s_full.params)):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6, atol=1e-7)
  apply_bf16, _ = nnx_apply_fn(model, compute_dtype=jnp.bfloat16)
  evals = [float(jax.jit(sft.make_sft_eval(apply_bf16, c))(params, batch)) for c in (0, 5)]
  np.testing.assert_allclose(evals[1], evals[0], rtol=1e-2)
  np.testing.assert_allclose(
      float(jax.jit(sft.make_sft_eval(apply_fn, 5))(params, batch)),
      float(jax.jit(sft.make_sft_eval(apply_fn, 0))(params, batch)), rtol=1e-6)
