"""Pieces every training entry point repeats: the model from its `model` block and an optional
tokenizer (`lib.models.model_setup`), the optimizer state on an optional mesh, and resuming from
`lib.train.checkpoint`. Scalars go to TensorBoard through `lib.run.tb.scalars`.

Config block `model`: see lib/models/model_setup.py (checkpoint, preset, overrides, dtype,
vocab_size; dtype is the compute dtype, master weights stay float32). Config block `mesh`: data,
fsdp (device counts; data * fsdp <= devices, 1 x 1 = single device); the state is created in its
FSDP shards (`create_state`); the SFT step is jitted over the mesh by `lib.sft.loop`, GRPO / OPSD
steps by their trainers' `mesh_step_fn` (`lib.rl.trainer`). Nothing here imports an RL trainer, so
SFT runs never load them. Config field `start_fresh` (default False): move the run's existing
checkpoints aside (`<workdir>/ckpt.discarded-<time>`) and train from step 0 instead of resuming; the
way out when no checkpoint is intact (`lib.train.checkpoint.CheckpointError`).
"""
import os
from typing import Any

import jax
from absl import logging

from lib.models.model_setup import build_model, compute_dtype
from lib.parallel import sharding
from lib.train.checkpoint import Checkpointer, CheckpointError
from lib.train.state import TrainState, nnx_apply_fn


def setup(config: Any, tx, seed: int | jax.Array, tokenizer=None):
  """The model of `config.model` (`lib.models.model_setup.build_model`) with its train state on
  `config.mesh`.

  Args:
    config: a run config with a `model` and (optionally) a `mesh` block.
    tx: the optimizer.
    seed: init seed of a from-scratch model, or a PRNG key the seed is drawn from.
    tokenizer: a from-scratch model takes its vocabulary, EOS and pad ids from it (a checkpoint
      brings its own, `lib.models.model_setup.model_tokenizer`); None: the preset's (the toy
      trainers feed token ids).
  Returns:
    (model, apply_fn, state, mesh or None, state sharding or None); the model config is
    `model.config`.
  """
  if not isinstance(seed, int):
    seed = int(jax.random.randint(seed, (), 0, 2**31 - 1))
  model, _, _ = build_model(config.model, seed=seed, tokenizer=tokenizer)
  apply_fn, params = nnx_apply_fn(model, compute_dtype=compute_dtype(config.model))
  mesh = sharding.mesh_from_config(config)
  state, state_sh = create_state(params, tx, mesh)
  logging.info("model: %d params, mesh %s", sum(x.size for x in jax.tree.leaves(params)),
               None if mesh is None else dict(mesh.shape))
  return model, apply_fn, state, mesh, state_sh


def create_state(params: Any, tx, mesh) -> tuple[TrainState, Any]:
  """The step-0 train state, created directly in its FSDP shards when `mesh` is given (the AdamW
  moments are never materialised whole on one device).

  Args:
    params: the trainable params.
    tx: the optimizer.
    mesh: a mesh from `lib.parallel.sharding.mesh_from_config`, or None.
  Returns:
    (state, its sharding pytree or None).
  """
  if mesh is None:
    return TrainState.create(params, tx), None
  state_sh = sharding.state_shardings(jax.eval_shape(lambda p: TrainState.create(p, tx), params),
                                      mesh)
  params = jax.device_put(params, state_sh.params)
  return jax.jit(lambda p: TrainState.create(p, tx), out_shardings=state_sh)(params), state_sh


def fresh_start(config: Any) -> bool:
  """The run config's `start_fresh` switch (False when the config has no such field).

  Args:
    config: a run config.
  Returns:
    whether to discard existing checkpoints instead of resuming.
  """
  return bool(config.get("start_fresh", False))


def resume(workdir: str, state: TrainState, max_to_keep: int = 3, subdir: str = "ckpt",
           start_fresh: bool = False):
  """Restores the latest intact checkpoint under <workdir>/<subdir>, if any.

  Args:
    workdir: the run directory.
    state: the fresh state (the restore template).
    max_to_keep: checkpoints the returned checkpointer keeps.
    subdir: checkpoint folder inside workdir.
    start_fresh: move existing checkpoints aside and start from step 0 (`fresh_start(config)`;
      `lib.train.checkpoint.Checkpointer(start_fresh=True)`).
  Returns:
    (checkpointer, state, start_iteration, metadata ({} without a checkpoint)).
  Raises:
    CheckpointError: checkpoints exist but none is intact (one line naming the way out).
  """
  ckpt = Checkpointer(os.path.join(workdir, subdir), max_to_keep=max_to_keep,
                      start_fresh=start_fresh)
  if ckpt.latest_step() is None:
    return ckpt, state, 0, {}
  try:
    state, meta = ckpt.restore(template=state)
  except CheckpointError as e:
    raise CheckpointError(f"{e} (launch.py: --config.start_fresh=True)") from None
  logging.info("resumed from iteration %d", meta["step"])
  return ckpt, state, int(meta["step"]), meta

