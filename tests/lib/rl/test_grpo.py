"""lib/rl/grpo.py: GRPO on a toy verifiable task with the tiny Qwen3 and the jitted sampler."""
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx

from lib import models
from lib.rl import grpo
from lib.train import optim
from lib.train.state import TrainState, nnx_apply_fn

TARGET = 5


def first_token_prob(apply_fn, params, prompt_ids, prompt_mask):
  logits = apply_fn(params, jnp.asarray(prompt_ids), jnp.asarray(prompt_mask))[:, -1]
  return float(jax.nn.softmax(logits, -1)[:, TARGET].mean())


@pytest.fixture(scope="module")
def tiny():
  """Model, apply_fn and sampler shared by the tests, so the sampler compiles once."""
  model = models.build(models.preset("qwen3-tiny", vocab_size=32), rngs=nnx.Rngs(0))
  apply_fn, params = nnx_apply_fn(model)
  sample_fn = grpo.nnx_sample_fn(model, max_new_tokens=3, temperature=1.0)
  return apply_fn, params, sample_fn


def make_trainer(tiny, lr=1e-2, **cfg):
  apply_fn, params, sample_fn = tiny
  tx = optim.adamw(lr=lr, total_steps=100, schedule="constant", weight_decay=0.0)
  config = grpo.GRPOConfig(**{"group_size": 8, "minibatch_prompts": 8, **cfg})
  state = TrainState.create(jax.tree.map(jnp.copy, params), tx)
  return apply_fn, grpo.GRPOTrainer(apply_fn, sample_fn, state, tx, config)


def prompts(rng, b=8):
  ids = rng.integers(6, 32, (b, 4)).astype(np.int32)
  return ids, np.ones_like(ids)


def first_token_reward(tokens, lengths):
  return (tokens[:, 0] == TARGET).astype(np.float32).reshape(-1, 8)


def test_grpo_raises_reward_on_first_token_task(tiny):
  """Reward 1 when the first generated token is TARGET (p ~ 1/32 at init)."""
  apply_fn, trainer = make_trainer(tiny)
  rng = np.random.default_rng(0)
  eval_ids, eval_mask = prompts(np.random.default_rng(123), 16)
  p_before = first_token_prob(apply_fn, trainer.state.params, eval_ids, eval_mask)
  ref0 = jax.tree.map(np.asarray, trainer.ref_params)
  history, kls = [], []
  key = jax.random.key(0)
  for it in range(16):
    ids, mask = prompts(rng)
    m = trainer.iteration(ids, mask, first_token_reward, jax.random.fold_in(key, it))
    history.append(m["reward_mean"])
    kls.append(m["ref_kl"])
    assert np.isfinite(m["loss"]) and 0 <= m["zero_std_group_frac"] <= 1
  p_after = first_token_prob(apply_fn, trainer.state.params, eval_ids, eval_mask)
  assert p_before < 0.1
  assert p_after > 0.5, (p_before, p_after, history)
  assert np.mean(history[-3:]) > np.mean(history[:3]) + 0.2, history
  # The reference is frozen: the first update is at the reference exactly, then the KL grows.
  for a, b in zip(jax.tree.leaves(ref0), jax.tree.leaves(trainer.ref_params)):
    np.testing.assert_array_equal(a, np.asarray(b))
  assert kls[0] == 0.0 and kls[-1] > 0.0
  assert {"clip_frac", "ref_kl", "entropy", "tokens_per_s", "response_len_mean"} <= set(m)




def test_update_epochs_and_minibatches_go_off_policy(tiny):
  """2 epochs x 2 minibatches of 4 whole groups, 2 micro-batches each: 4 optimizer steps; every
  step after the first sees samples from an older policy (ratio != 1)."""
  _, trainer = make_trainer(tiny, update_epochs=2, minibatch_prompts=4, micro_batch=16)
  ids, mask = prompts(np.random.default_rng(5))
  rewards = lambda tokens, lengths: np.tile(np.arange(8, dtype=np.float32), (8, 1))
  m = trainer.iteration(ids, mask, rewards, jax.random.key(0))
  assert int(trainer.state.step) == 4
  assert m["approx_kl"] != 0.0 and m["ratio_mean"] != 1.0
  with pytest.raises(ValueError, match="do not split"):
    make_trainer(tiny, minibatch_prompts=3)[1].iteration(ids, mask, rewards, jax.random.key(1))


def _rollout_batch(rng, rows=4, prompt=4, n=3):
  ids = rng.integers(0, 32, (rows, prompt + n)).astype(np.int32)
  mask = np.ones_like(ids)
  mask[0, :2] = 0                                   # one left-padded prompt
  resp = np.ones((rows, n), np.int32)
  resp[1, 2:] = 0                                   # one response that ended early
  return {"input_ids": jnp.asarray(ids), "attention_mask": jnp.asarray(mask),
          "response_mask": jnp.asarray(resp),
          "ref_logp": jnp.asarray(rng.normal(-3.0, 0.3, (rows, n)).astype(np.float32)),
          "advantages": jnp.asarray(rng.normal(size=(rows,)).astype(np.float32))}


def test_response_logprobs_score_the_window_as_the_full_forward_does(tiny):
  """The head runs on the last N + 1 positions only; log-probs and entropies equal a NumPy
  log-softmax of the full forward's logits at the response positions."""
  apply_fn, params, _ = tiny
  batch = _rollout_batch(np.random.default_rng(0))
  logp, entropy = jax.jit(grpo.response_logprobs, static_argnums=(0, 4, 5))(
      apply_fn, params, batch["input_ids"], batch["attention_mask"], 3, 0.7)
  full = np.asarray(jax.jit(apply_fn)(params, batch["input_ids"], batch["attention_mask"]),
                    np.float64)
  z = full[:, -4:-1] / 0.7
  log_p = z - z.max(-1, keepdims=True)
  log_p -= np.log(np.exp(log_p).sum(-1, keepdims=True))
  tokens = np.asarray(batch["input_ids"])[:, -3:]
  np.testing.assert_allclose(logp, np.take_along_axis(log_p, tokens[..., None], -1)[..., 0],
                             rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(entropy, -(np.exp(log_p) * log_p).sum(-1), rtol=1e-5, atol=1e-5)


def test_rollout_scored_in_micro_batches_equals_all_rows_at_once(tiny):
  """`micro_rows` scores the rows a chunk at a time (one chunk's logits live at once); old and
  reference log-probs are the same as one pass over every row. A divisor that does not split the
  rows falls back to one pass."""
  apply_fn, params, _ = tiny
  batch = _rollout_batch(np.random.default_rng(1), rows=8)
  ref = jax.tree.map(lambda x: x * 1.1, params)
  score = jax.jit(grpo.rollout_logprobs, static_argnums=(0, 5, 6, 7, 8))
  args = (apply_fn, params, ref, batch["input_ids"], batch["attention_mask"], 3, 0.7, True)
  whole = score(*args, 0)
  for micro in (2, 4, 3):
    chunked = score(*args, micro)
    for a, b in zip(whole, chunked):
      np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6, atol=1e-6)
  assert not np.allclose(whole[0], whole[1])     # policy and reference really differ


def test_on_policy_step_reads_its_own_logprobs_as_old_logp(tiny):
  """Without old_logp the step is on-policy: the same loss and update as with old_logp from a
  separate pass over the same params, ratio exactly 1 and no drift."""
  apply_fn, params, _ = tiny
  tx = optax.sgd(1e-2)        # plain SGD: the update is the gradient, compared directly
  step = jax.jit(grpo.make_grpo_step(apply_fn, tx, grpo.GRPOConfig()))
  batch = _rollout_batch(np.random.default_rng(1))
  old, _ = jax.jit(grpo.response_logprobs, static_argnums=(0, 4))(
      apply_fn, params, batch["input_ids"], batch["attention_mask"], 3)
  fresh = lambda: TrainState.create(jax.tree.map(jnp.copy, params), tx)
  s_off, m_off = step(fresh(), {**batch, "old_logp": old})
  s_on, m_on = step(fresh(), batch)
  assert float(m_on["ratio_mean"]) == 1.0 and float(m_on["approx_kl"]) == 0.0
  np.testing.assert_allclose(m_on["loss"], m_off["loss"], rtol=1e-5, atol=1e-6)
  for a, b in zip(jax.tree.leaves(s_on.params), jax.tree.leaves(s_off.params)):
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)


def test_vocabulary_chunked_scoring_and_step_equal_full_logits(tiny):
  """loss_chunk_tokens=5 (8 rows x 3 response tokens = 24 positions: a padded last chunk) gives
  the full-logits path's (loss_chunk_tokens=0) log-probs, entropies, rollout scores, and the
  GRPO step's loss, metrics and SGD update (temperature 0.7, entropy bonus on, off-policy)."""
  apply_fn, params, _ = tiny
  batch = _rollout_batch(np.random.default_rng(2), rows=8)
  ids, mask = batch["input_ids"], batch["attention_mask"]
  score = jax.jit(grpo.response_logprobs, static_argnums=(0, 4, 5, 6))
  (lp0, ent0), (lp5, ent5) = (score(apply_fn, params, ids, mask, 3, 0.7, c) for c in (0, 5))
  np.testing.assert_allclose(lp5, lp0, rtol=1e-6, atol=1e-6)
  np.testing.assert_allclose(ent5, ent0, rtol=1e-6, atol=1e-6)
  assert (np.asarray(lp5) <= 0).all()
  ref = jax.tree.map(lambda x: x * 1.1, params)
  roll = jax.jit(grpo.rollout_logprobs, static_argnums=(0, 5, 6, 7, 8, 9))
  for a, b in zip(roll(apply_fn, params, ref, ids, mask, 3, 0.7, True, 4, 0),
                  roll(apply_fn, params, ref, ids, mask, 3, 0.7, True, 4, 5)):
    np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-6, atol=1e-6)

  tx = optax.sgd(1e-1)
  data = {**batch, "old_logp": lp0 - 0.05}
  fresh = lambda: TrainState.create(jax.tree.map(jnp.copy, params), tx)
  run = lambda c: jax.jit(grpo.make_grpo_step(apply_fn, tx, grpo.GRPOConfig(
      temperature=0.7, entropy_coef=0.1, loss_chunk_tokens=c), accum_steps=2))(fresh(), data)
  (s0, m0), (s5, m5) = run(0), run(5)
  for k in m0:
    np.testing.assert_allclose(float(m5[k]), float(m0[k]), rtol=1e-5, atol=1e-7, err_msg=k)
  np.testing.assert_allclose(float(m5["loss"]), float(m0["loss"]), rtol=1e-6)
  for a, b in zip(jax.tree.leaves(s5.params), jax.tree.leaves(s0.params)):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6, atol=1e-7)


def test_a_bf16_frozen_copy_scores_as_the_float32_one_where_the_model_computes_in_bf16(tiny):
  """`frozen_dtype="bfloat16"` stores the GRPO reference (and the OPSD teacher, the same
  `frozen_copy`) in bf16, half the bytes; with bf16 compute (`nnx_apply_fn`'s compute_dtype casts
  every param to bf16 first) its log-probs equal the float32 copy's bit for bit."""
  from lib.rl import opsd
  sample_fn = tiny[2]
  model = models.build(models.preset("qwen3-tiny", vocab_size=32), rngs=nnx.Rngs(0))
  apply16, params = nnx_apply_fn(model, compute_dtype=jnp.bfloat16)
  tx = optax.sgd(1e-1)
  state = TrainState.create(params, tx)
  f32, b16 = (grpo.GRPOTrainer(apply16, sample_fn, state, tx, grpo.GRPOConfig(frozen_dtype=d))
              for d in ("", "bfloat16"))
  assert {x.dtype for x in jax.tree.leaves(b16.ref_params)} == {jnp.dtype(jnp.bfloat16)}
  nbytes = lambda t: sum(x.nbytes for x in jax.tree.leaves(t))
  assert 2 * nbytes(b16.ref_params) == nbytes(f32.ref_params) == nbytes(state.params)
  batch = _rollout_batch(np.random.default_rng(3), rows=8)
  score = jax.jit(grpo.rollout_logprobs, static_argnums=(0, 5, 6, 7, 8, 9))
  args = (batch["input_ids"], batch["attention_mask"], 3, 0.7, False, 4, 5)
  ref32, ref16 = (score(apply16, params, t.ref_params, *args)[1] for t in (f32, b16))
  np.testing.assert_array_equal(np.asarray(ref16), np.asarray(ref32))
  teacher = opsd.OPSDTrainer(apply16, sample_fn, state, tx,
                             opsd.OPSDConfig(frozen_dtype="bfloat16")).teacher_params
  assert nbytes(teacher) == nbytes(b16.ref_params)
