"""One SFT, one GRPO and one OPSD update on a 2x4 ("data", "fsdp") mesh of 8 fake CPU devices
equal the single-device update, in float32 (SFT and GRPO: loss and gradient norm rtol 1e-5,
parameters within 1e-2 x lr) and with bfloat16 compute and per-layer rematerialisation, as the
paper-scale configs run (all three: loss and gradient norm rtol 1e-2, parameters within 0.1 x lr
on average; OPSD through the trainers' mesh path `lib.train.setup.create_state` +
`OPSDTrainer.mesh_step_fn`). XLA's device count is fixed at start-up, so the comparison runs in
a child process (this file run as a script) with --xla_force_host_platform_device_count=8 added
to XLA_FLAGS.
"""
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.long_module(60)   # scheduled first: tests/conftest.py

LR = 1e-2
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def test_sft_grpo_opsd_steps_on_8_devices_equal_single_device():
  # tests/conftest.py's -O0 flag is kept: the child is compile-bound (59 s instead of 79 s).
  env = dict(os.environ, JAX_PLATFORMS="cpu", PYTHONPATH=ROOT,
             XLA_FLAGS=os.environ.get("XLA_FLAGS", "") +
             " --xla_force_host_platform_device_count=8")
  out = subprocess.run([sys.executable, os.path.abspath(__file__)], env=env, cwd=ROOT,
                       capture_output=True, text=True, timeout=600)
  assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
  for name in ("sft ok", "grpo ok", "sft bf16 ok", "grpo bf16 ok", "opsd bf16 ok"):
    assert name in out.stdout, out.stdout


def test_fsdp_spec_picks_largest_divisible_dim_or_replicates():
  from jax.sharding import PartitionSpec as P
  from lib.parallel import sharding
  assert sharding.fsdp_spec((128, 512), 4) == P(None, "fsdp")
  assert sharding.fsdp_spec((512, 128), 4) == P("fsdp", None)
  assert sharding.fsdp_spec((130, 64), 4) == P(None, "fsdp")     # 130 is not divisible
  assert sharding.fsdp_spec((131, 63), 4) == P()                 # nothing divides: replicate
  assert sharding.fsdp_spec((32,), 4) == P()                     # small leaves stay replicated
  assert sharding.fsdp_spec((4096, 4096), 1) == P()


def _compare(name, single, sharded, mesh_state):
  import jax
  import numpy as np
  (s1, m1), (s8, m8) = single, sharded
  assert float(jax.device_get(m1["loss"])) != 0.0
  np.testing.assert_allclose(float(m1["loss"]), float(m8["loss"]), rtol=1e-5)
  np.testing.assert_allclose(float(m1["grad_norm"]), float(m8["grad_norm"]), rtol=1e-5)
  # Adam's first step is lr * g / (|g| + eps): for |g| near eps it moves with the last bits of g,
  # which the reduction order (and XLA's optimisation level: one element of 1,024 differs by
  # 5.8e-3 x lr at -O0) changes, so parameters are compared to a small fraction of the step LR.
  # A wrong reduction or shard moves them by ~lr.
  leaves1, leaves8 = jax.tree.leaves(s1.params), jax.tree.leaves(s8.params)
  for a, b in zip(leaves1, leaves8):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=0, atol=1e-2 * LR)
  # The big matrices really are split over the fsdp axis.
  specs = [x.sharding.spec for x in jax.tree.leaves(s8.params)]
  assert any("fsdp" in tuple(s) for s in specs), specs
  print(f"{name} ok", flush=True)


def _compare_bf16(name, single, sharded):
  """bf16 compute: the two programs round differently, so loose bounds (a wrong shard is ~lr)."""
  import jax
  import numpy as np
  (s1, m1), (s8, m8) = single, sharded
  assert float(m1["loss"]) != 0.0
  np.testing.assert_allclose(float(m8["loss"]), float(m1["loss"]), rtol=1e-2)
  np.testing.assert_allclose(float(m8["grad_norm"]), float(m1["grad_norm"]), rtol=1e-2)
  diffs = [np.abs(np.asarray(a) - np.asarray(b)).mean()
           for a, b in zip(jax.tree.leaves(s1.params), jax.tree.leaves(s8.params))]
  assert max(diffs) < 0.1 * LR, diffs
  assert any("fsdp" in tuple(x.sharding.spec) for x in jax.tree.leaves(s8.params))
  print(f"{name} bf16 ok", flush=True)


def _child():
  import jax
  import jax.numpy as jnp
  import numpy as np
  from flax import nnx

  from lib import models
  from lib.parallel import sharding
  from lib.rl import grpo, opsd
  from lib.sft import step as sft
  from lib.train import optim, setup as train_loop
  from lib.train.state import TrainState, nnx_apply_fn

  assert jax.device_count() == 8, jax.devices()
  model = models.build(models.preset("qwen3-tiny"), rngs=nnx.Rngs(0))
  apply_fn, params = nnx_apply_fn(model)
  tx = optim.adamw(lr=LR, total_steps=10, warmup_frac=0.0, schedule="cosine")
  mesh = sharding.make_mesh(data=2, fsdp=4)
  rng = np.random.default_rng(0)

  def fresh():
    return TrainState.create(jax.tree.map(jnp.copy, params), tx)

  def run_both(step, batch):
    single = jax.jit(step)(fresh(), batch)
    state = fresh()
    sh = sharding.state_shardings(state, mesh, min_size=256)
    sharded = sharding.jit_step(step, mesh, sh)(jax.device_put(state, sh),
                                                 sharding.shard_batch(batch, mesh))
    return single, sharded

  # SFT: 16 rows, 2 accumulation micro-batches.
  ids = rng.integers(3, 128, (16, 12)).astype(np.int32)
  attn = (np.arange(12)[None] < rng.integers(6, 13, (16, 1))).astype(np.int32)
  loss_mask = attn * (np.arange(12)[None] >= 4)
  batch = {"input_ids": ids, "attention_mask": attn, "loss_mask": loss_mask}
  _compare("sft", *run_both(sft.make_sft_step(apply_fn, tx, accum_steps=2), batch), mesh)
  # the same in bf16 compute with remat "full" (float32 master weights and moments)
  bf16_fn, _ = nnx_apply_fn(models.set_remat(model, "full"), compute_dtype=jnp.bfloat16)
  _compare_bf16("sft", *run_both(sft.make_sft_step(bf16_fn, tx, accum_steps=2), batch))

  # GRPO: 16 responses of 5 tokens after 6-token prompts, off-policy old log-probs.
  cfg = grpo.GRPOConfig(group_size=4, kl_coef=0.05, entropy_coef=0.01)
  ids = rng.integers(3, 128, (16, 11)).astype(np.int32)
  resp = (np.arange(5)[None] < rng.integers(1, 6, (16, 1))).astype(np.int32)
  attn = np.concatenate([np.ones((16, 6), np.int32), resp], 1)
  logp, _ = grpo.response_logprobs(apply_fn, params, jnp.asarray(ids), jnp.asarray(attn), 5)
  batch = {"input_ids": ids, "attention_mask": attn, "response_mask": resp,
           "old_logp": np.asarray(logp) + rng.normal(0, 0.1, (16, 5)).astype(np.float32),
           "ref_logp": np.asarray(logp) + rng.normal(0, 0.1, (16, 5)).astype(np.float32),
           "advantages": rng.normal(size=(16,)).astype(np.float32)}
  _compare("grpo", *run_both(grpo.make_grpo_step(apply_fn, tx, cfg, accum_steps=2), batch), mesh)
  _compare_bf16("grpo", *run_both(grpo.make_grpo_step(bf16_fn, tx, cfg, accum_steps=2), batch))

  # OPSD, bf16 compute, remat "full": 16 rows in micro-batches of 8 (accum 2) as a trainer runs it.
  ocfg = opsd.OPSDConfig(minibatch=16, micro_batch=8)
  teacher = jax.tree.map(lambda x: x * 1.5 if x.ndim == 2 else x, params)
  ids = rng.integers(3, 128, (16, 11)).astype(np.int32)
  resp = (np.arange(5)[None] < rng.integers(1, 6, (16, 1))).astype(np.int32)
  attn = np.concatenate([np.ones((16, 6), np.int32), resp], 1)
  batch = {"student_ids": ids, "student_mask": attn, "teacher_ids": ids, "teacher_mask": attn,
           "tokens": ids[:, 6:], "loss_mask": resp,
           "old_logp": np.full((16, 5), -4.0, np.float32)}
  step = opsd.make_opsd_step(bf16_fn, tx, ocfg, accum_steps=2)
  s1, m1 = jax.jit(step)(fresh(), teacher, batch)
  state, state_sh = train_loop.create_state(jax.tree.map(jnp.copy, params), tx, mesh)
  sharded_teacher = jax.device_put(teacher, state_sh.params)
  step8 = opsd.OPSDTrainer.mesh_step_fn(bf16_fn, tx, ocfg, 16, mesh, state_sh, state_sh.params)
  _compare_bf16("opsd", (s1, m1), step8(state, sharded_teacher, batch))


if __name__ == "__main__":
  _child()
