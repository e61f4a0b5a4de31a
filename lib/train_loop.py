"""Pieces every training entry point repeats: the model from a config block, the optimizer state on
an optional mesh, resuming from `lib.checkpoint`, and logging to TensorBoard.

Config block `model`: preset (a `lib.models` preset name), overrides (dict of QwenConfig fields),
checkpoint (a local Hugging Face directory; empty = random init from the preset), dtype
("float32" | "bfloat16": compute dtype, master weights stay float32).
Config block `mesh`: data, fsdp (device counts; data * fsdp <= devices, 1 x 1 = single device).
"""
import os
from typing import Any

import jax
import jax.numpy as jnp
from absl import logging
from flax import nnx

from lib import models, sharding, tb
from lib.checkpoint import Checkpointer
from lib.train_state import TrainState, nnx_apply_fn


def build_model(c: Any, seed: int) -> nnx.Module:
  if c.checkpoint:
    model, _ = models.load_pretrained(c.checkpoint, dtype="float32")
    return model
  config = models.preset(c.preset, **dict(c.get("overrides", {}) or {}))
  return models.build(config, rngs=nnx.Rngs(seed))


def setup(config: Any, tx, key: jax.Array):
  """-> (model, apply_fn, state, mesh or None, state sharding or None)."""
  model = build_model(config.model, int(jax.random.randint(key, (), 0, 2**31 - 1)))
  dtype = None if config.model.dtype == "float32" else jnp.dtype(config.model.dtype)
  apply_fn, params = nnx_apply_fn(model, compute_dtype=dtype)
  state = TrainState.create(params, tx)
  mesh = state_sh = None
  if config.mesh.data * config.mesh.fsdp > 1:
    mesh = sharding.make_mesh(config.mesh.data, config.mesh.fsdp)
    state_sh = sharding.state_shardings(state, mesh)
    state = jax.device_put(state, state_sh)
  logging.info("model: %d params, mesh %s", sum(x.size for x in jax.tree.leaves(params)),
               None if mesh is None else dict(mesh.shape))
  return model, apply_fn, state, mesh, state_sh


def resume(workdir: str, state: TrainState, max_to_keep: int = 3):
  """-> (checkpointer, state, start_iteration, metadata); restores the latest checkpoint if any."""
  ckpt = Checkpointer(os.path.join(workdir, "ckpt"), max_to_keep=max_to_keep)
  if ckpt.latest_step() is None:
    return ckpt, state, 0, {}
  state, meta = ckpt.restore(template=state)
  logging.info("resumed from iteration %d", meta["step"])
  return ckpt, state, int(meta["step"]), meta


def log_scalars(workdir: str, step: int, metrics: dict, prefix: str) -> None:
  tb.scalars(workdir, step, metrics, prefix=prefix)
  tb.writer(workdir).flush()
