"""lib/rl/opsd.py: on-policy self-distillation lowers the JSD to a privileged teacher (toy task)."""
import jax
import numpy as np
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
