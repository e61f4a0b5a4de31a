"""configs/paper_scale.py and the papers' micro-batching: the accumulation each paper-scale preset
asks for (GenCoord micro 4 x accumulation 4; ConPAct one row per device; the world-model audit's
Table 6, one response per device for GRPO and OPSD) gives the update of one micro-batch holding
every row, at tiny size (a 2-layer Qwen3, float32, plain SGD so the update is lr x the gradient)."""
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx

from configs.conpact import train as conpact_train
from configs.gencoord import learned
from configs.wm import train as wm_train
from lib import models
from lib.rl import grpo, opsd
from lib.sft import step as sft
from lib.train.state import TrainState, nnx_apply_fn

TINY = dict(vocab_size=64, hidden_size=32, intermediate_size=64, num_layers=2, num_heads=2,
            num_kv_heads=1, head_dim=16)
T, N = 24, 6          # tokens per row, response tokens (GRPO / OPSD)


@pytest.fixture(scope="module")
def tiny():
  model = models.build(models.preset("qwen3-tiny", **TINY), rngs=nnx.Rngs(0))
  apply_fn, params = nnx_apply_fn(model)
  tx = optax.sgd(0.1)
  return apply_fn, params, tx, lambda: TrainState.create(jax.tree.map(jnp.copy, params), tx)


def _ids(rng, rows):
  ids = rng.integers(3, TINY["vocab_size"], (rows, T)).astype(np.int32)
  mask = np.ones((rows, T), np.int32)
  for r in range(rows):                       # left padding of different lengths
    mask[r, :rng.integers(0, 8)] = 0
  return ids, mask


def _sft_batch(rng, rows):
  ids, mask = _ids(rng, rows)
  return {"input_ids": ids, "attention_mask": mask,
          "loss_mask": mask * (rng.random((rows, T)) < 0.6).astype(np.int32)}


def _grpo_batch(rng, rows):
  # Every row scores all N response tokens: GRPO averages its micro-batches' token-means (weight
  # 1 each, as verl does), which equals the whole minibatch's token-mean only when every
  # micro-batch holds as many response tokens (with ragged responses at one row per micro-batch
  # it is the mean of per-row means instead).
  ids, mask = _ids(rng, rows)
  return {"input_ids": ids, "attention_mask": mask, "response_mask": np.ones((rows, N), np.int32),
          "old_logp": rng.uniform(-5, -1, (rows, N)).astype(np.float32),
          "ref_logp": rng.uniform(-5, -1, (rows, N)).astype(np.float32),
          "advantages": rng.normal(size=rows).astype(np.float32)}


def _opsd_batch(rng, rows):
  (s_ids, s_mask), (t_ids, t_mask) = _ids(rng, rows), _ids(rng, rows)
  tokens = rng.integers(3, TINY["vocab_size"], (rows, N)).astype(np.int32)
  s_ids[:, -N:], t_ids[:, -N:] = tokens, tokens
  return {"student_ids": s_ids, "student_mask": s_mask, "teacher_ids": t_ids,
          "teacher_mask": t_mask, "tokens": tokens,
          "loss_mask": (rng.random((rows, N)) < 0.7).astype(np.int32),
          "old_logp": rng.uniform(-5, -1, (rows, N)).astype(np.float32)}


def _same_update(one, accumulated):
  (s1, m1), (sk, mk) = one, accumulated
  np.testing.assert_allclose(float(mk["loss"]), float(m1["loss"]), rtol=1e-5, atol=1e-7)
  for a, b in zip(jax.tree.leaves(sk.params), jax.tree.leaves(s1.params)):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)


def _presets():
  gc = learned.get_config("scale=paper")
  cp = conpact_train.get_config("scale=paper")
  return {"gencoord": (gc.plan.rows, gc.plan.micro_rows), "conpact": (cp.plan.rows,
                                                                       cp.plan.micro_rows)}


@pytest.mark.parametrize("paper", ["gencoord", "conpact"])
def test_sft_presets_accumulate_to_the_one_micro_batch_step(tiny, paper):
  rows, micro = _presets()[paper]
  assert (rows, micro) == {"gencoord": (16, 4), "conpact": (8, 1)}[paper]
  apply_fn, _, tx, fresh = tiny
  batch = jax.tree.map(jnp.asarray, _sft_batch(np.random.default_rng(0), rows))
  run = lambda accum: jax.jit(sft.make_sft_step(apply_fn, tx, accum_steps=accum))(fresh(), batch)
  _same_update(run(1), run(rows // micro))


@pytest.mark.parametrize("condition", ["GRPO-GT", "OPSD-GT"])
def test_world_model_table_6_micro_batches_accumulate_to_the_one_micro_batch_step(tiny,
                                                                                   condition):
  config = wm_train.get_config(f"scale=paper,env=alfworld,condition={condition}")
  trainer = config.plan.trainer
  block = config.opsd if trainer == "opsd" else config.grpo
  assert block.micro_batch == 1               # one response per device, one device here
  rows = 8                                    # the minibatch at tiny size (paper: 32 / 256)
  apply_fn, params, tx, fresh = tiny
  rng = np.random.default_rng(1)
  if trainer == "grpo":
    batch = jax.tree.map(jnp.asarray, _grpo_batch(rng, rows))
    run = lambda accum: jax.jit(grpo.make_grpo_step(apply_fn, tx, grpo.GRPOConfig(),
                                                    accum))(fresh(), batch)
  else:
    batch = jax.tree.map(jnp.asarray, _opsd_batch(rng, rows))
    teacher = jax.tree.map(lambda x: x * 1.1, params)
    run = lambda accum: jax.jit(opsd.make_opsd_step(apply_fn, tx, opsd.OPSDConfig(),
                                                    accum))(fresh(), teacher, batch)
  _same_update(run(1), run(rows // block.micro_batch))


def test_world_model_paper_rollouts_sample_from_bf16_and_the_plan_follows_the_trainer():
  for condition, block in (("GRPO-GT", "grpo"), ("OPSD-GT", "opsd")):
    c = wm_train.get_config(f"scale=paper,env=alfworld,condition={condition}")
    assert (c[block].rollout_dtype, c[block].prefill_rows) == ("bfloat16", 16)
    assert (c.plan.rollout_dtype, c.plan.prefill_rows) == ("bfloat16", 16)
    c[block].rollout_dtype, c[block].prefill_rows = "", 0       # the plan reads the trainer's
    assert (c.plan.rollout_dtype, c.plan.prefill_rows) == ("", 0)
    cpu = wm_train.get_config(f"env=alfworld,condition={condition}")
    assert (cpu[block].rollout_dtype, cpu[block].prefill_rows) == ("", 0)


def test_bf16_rollout_settings_reach_the_sampler(tiny):
  model = models.build(models.preset("qwen3-tiny", **TINY), rngs=nnx.Rngs(0))
  _, params = nnx_apply_fn(model)
  ids = np.full((4, 5), 7, np.int32)
  mask = np.ones((4, 5), np.int32)
  key = jax.random.key(0)
  outs = {}
  for kw in (dict(), dict(weights_dtype="bfloat16", prefill_rows=2)):
    fn = grpo.nnx_sample_fn(model, max_new_tokens=3, temperature=1e-4, **kw)
    outs[bool(kw)] = np.asarray(fn(params, ids, mask, key)[0])
  with pytest.raises(ValueError):        # prefill_rows must divide the rows: it reached generate
    grpo.nnx_sample_fn(model, max_new_tokens=3, prefill_rows=3)(params, ids, mask, key)
  assert outs[True].shape == outs[False].shape == (4, 3)
