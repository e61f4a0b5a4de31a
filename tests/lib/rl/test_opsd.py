"""lib/rl/opsd.py: on-policy self-distillation lowers the JSD to a privileged teacher (toy task)."""
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from lib import models
from lib.rl import grpo, opsd
from lib.train import optim
from lib.train.state import TrainState, nnx_apply_fn


HINT = np.array([7, 8, 9], np.int32)


def prompts(rng, b):
  """Student sees 4 tokens; the teacher additionally sees a fixed privileged 3-token hint first,
  so the teacher's behaviour is a function of the student's prompt that the student can absorb."""
  ids = rng.integers(10, 32, (b, 4)).astype(np.int32)
  hint = np.tile(HINT, (b, 1))
  return (ids, np.ones_like(ids)), (np.concatenate([hint, ids], 1), np.ones((b, 7), np.int32))


def test_opsd_lowers_jsd_to_teacher_and_masks_span():
  model = models.build(models.preset("qwen3-tiny", vocab_size=32), rngs=nnx.Rngs(0))
  # Larger weights than the 0.02 init so the hint visibly changes the teacher's distribution.
  nnx.update(model, jax.tree.map(lambda x: 4.0 * x if x.ndim == 2 else x,
                                 nnx.state(model, nnx.Param)))
  apply_fn, params = nnx_apply_fn(model)
  tx = optim.adamw(lr=3e-3, total_steps=100, schedule="constant", weight_decay=0.0)
  cfg = opsd.OPSDConfig(alpha=0.5, minibatch=16, update_epochs=2)
  sample_fn = grpo.nnx_sample_fn(model, max_new_tokens=4, temperature=1.0)
  trainer = opsd.OPSDTrainer(apply_fn, sample_fn, TrainState.create(params, tx), tx, cfg)
  # The loss covers only a target span (here: generated positions 1..3, as a parser would mark).
  span_fn = lambda tokens, lengths: (np.arange(tokens.shape[1]) >= 1)[None].repeat(len(tokens), 0)

  eval_batch = trainer.rollout(*prompts(np.random.default_rng(7), 32), jax.random.key(99),
                               span_fn)
  eval_batch.pop("lengths")
  assert eval_batch["loss_mask"][:, 0].sum() == 0 and eval_batch["loss_mask"][:, 1:].all()
  evaluate = jax.jit(opsd.make_jsd_eval(apply_fn, cfg))
  before = float(evaluate(trainer.state.params, trainer.teacher_params, eval_batch))
  rng = np.random.default_rng(0)
  weights = []
  for it in range(10):
    m = trainer.iteration(*prompts(rng, 16), jax.random.key(it), span_fn=span_fn)
    weights.append(m["is_weight_mean"])
    assert np.isfinite(m["loss"]) and m["target_span_tokens"] == 16 * 3
  after = float(evaluate(trainer.state.params, trainer.teacher_params, eval_batch))
  assert before > 1e-3
  assert after < 0.5 * before, (before, after)
  # Second epochs reuse samples from an older policy: weights move off 1 but stay <= clip.
  assert all(0 < w <= cfg.is_clip for w in weights) and any(abs(w - 1) > 1e-4 for w in weights)


def test_vocabulary_chunked_step_eval_and_old_logprobs_equal_full_logits():
  """loss_chunk_tokens=5 (8 rows x 3 tokens = 24 positions, a padded last chunk) gives the
  full-logits path's (0) old log-probs, JSD eval, and OPSD step (loss, metrics, SGD update) with
  temperature 0.8 and importance weights off 1; masked positions leave the loss unchanged."""
  model = models.build(models.preset("qwen3-tiny", vocab_size=32), rngs=nnx.Rngs(1))
  apply_fn, params = nnx_apply_fn(model)
  teacher = jax.tree.map(lambda x: x * 1.2, params)
  rng = np.random.default_rng(3)
  (s_ids, s_mask), (t_ids, t_mask) = prompts(rng, 8)
  tokens = rng.integers(0, 32, (8, 3)).astype(np.int32)
  batch = {"student_ids": np.concatenate([s_ids, tokens], 1),
           "student_mask": np.concatenate([s_mask, np.ones_like(tokens)], 1),
           "teacher_ids": np.concatenate([t_ids, tokens], 1),
           "teacher_mask": np.concatenate([t_mask, np.ones_like(tokens)], 1),
           "tokens": tokens, "loss_mask": (rng.random((8, 3)) < 0.7).astype(np.int32)}
  batch = jax.tree.map(jnp.asarray, batch)
  cfgs = [opsd.OPSDConfig(temperature=0.8, loss_chunk_tokens=c) for c in (0, 5)]
  old = [jax.jit(lambda p, c=c: opsd.response_token_logprobs(
      apply_fn, p, batch["student_ids"], batch["student_mask"], batch["tokens"], c))(params)
      for c in cfgs]
  np.testing.assert_allclose(old[1], old[0], rtol=1e-6, atol=1e-6)
  assert (np.asarray(old[1]) <= 0).all()
  evals = [float(jax.jit(opsd.make_jsd_eval(apply_fn, c))(params, teacher, batch)) for c in cfgs]
  np.testing.assert_allclose(evals[1], evals[0], rtol=1e-6)
  assert evals[0] > 0

  tx = optax.sgd(1e-1)
  data = {**batch, "old_logp": old[0] - 0.1}
  fresh = lambda: TrainState.create(jax.tree.map(jnp.copy, params), tx)
  runs = [jax.jit(opsd.make_opsd_step(apply_fn, tx, c, accum_steps=2))(fresh(), teacher, data)
          for c in cfgs]
  (s0, m0), (s5, m5) = runs
  for k in m0:
    np.testing.assert_allclose(float(m5[k]), float(m0[k]), rtol=1e-6, atol=1e-7, err_msg=k)
  for a, b in zip(jax.tree.leaves(s5.params), jax.tree.leaves(s0.params)):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6, atol=1e-7)
