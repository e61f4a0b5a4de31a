"""Pieces every training entry point repeats: the model from its `model` block
(`lib.model_setup`), the optimizer state on an optional mesh, resuming from `lib.checkpoint`, and
logging to TensorBoard.

Config block `model`: see lib/model_setup.py (checkpoint, preset, overrides, dtype, vocab_size;
dtype is the compute dtype, master weights stay float32).
Config block `mesh`: data, fsdp (device counts; data * fsdp <= devices, 1 x 1 = single device);
the state is created in its FSDP shards (`create_state`) and GRPO / OPSD steps are jitted over the
mesh by `rl_step_fn`.
Config field `start_fresh` (default False): move the run's existing checkpoints aside
(`<workdir>/ckpt.discarded-<time>`) and train from step 0 instead of resuming; the way out when no
checkpoint is intact (`lib.checkpoint.CheckpointError`).
"""
import os
from typing import Any

import jax
from absl import logging

from lib import grpo, opsd, sharding, tb
from lib.checkpoint import Checkpointer, CheckpointError
from lib.model_setup import build_model, compute_dtype
from lib.train_state import TrainState, nnx_apply_fn


def setup(config: Any, tx, key: jax.Array):
  """The model of `config.model` (no tokenizer: the toy trainers feed token ids) with its train
  state on `config.mesh`.

  Args:
    config: a run config with `model` and `mesh` blocks.
    tx: the optimizer.
    key: init key (a from-scratch model's seed is drawn from it).
  Returns:
    (model, apply_fn, state, mesh or None, state sharding or None).
  """
  model, _, _ = build_model(config.model, seed=int(jax.random.randint(key, (), 0, 2**31 - 1)))
  apply_fn, params = nnx_apply_fn(model, compute_dtype=compute_dtype(config.model))
  mesh = make_mesh(config)
  state, state_sh = create_state(params, tx, mesh)
  logging.info("model: %d params, mesh %s", sum(x.size for x in jax.tree.leaves(params)),
               None if mesh is None else dict(mesh.shape))
  return model, apply_fn, state, mesh, state_sh


def make_mesh(config: Any):
  """The ("data", "fsdp") mesh of `config.mesh`, or None for 1 x 1 or a config without a `mesh`
  block (one device, no sharding).

  Args:
    config: a run config, normally with a `mesh` block (data, fsdp).
  """
  if "mesh" not in config or config.mesh.data * config.mesh.fsdp == 1:
    return None
  return sharding.make_mesh(config.mesh.data, config.mesh.fsdp)


def create_state(params: Any, tx, mesh) -> tuple[TrainState, Any]:
  """The step-0 train state, created directly in its FSDP shards when `mesh` is given (the AdamW
  moments are never materialised whole on one device).

  Args:
    params: the trainable params.
    tx: the optimizer.
    mesh: a mesh from `make_mesh`, or None.
  Returns:
    (state, its sharding pytree or None).
  """
  if mesh is None:
    return TrainState.create(params, tx), None
  state_sh = sharding.state_shardings(jax.eval_shape(lambda p: TrainState.create(p, tx), params),
                                      mesh)
  params = jax.device_put(params, state_sh.params)
  return jax.jit(lambda p: TrainState.create(p, tx), out_shardings=state_sh)(params), state_sh


def rl_step_fn(kind: str, apply_fn, tx, cfg, rows: int, mesh, state_sh, frozen_sh=None):
  """The GRPO or OPSD update step jitted over `mesh` (batch over "data" x "fsdp", state kept on
  `state_sh`), for `GRPOTrainer(step_fn=...)` / `OPSDTrainer(step_fn=...)`; None without a mesh
  (the trainers then jit it on one device).

  Args:
    kind: "grpo" or "opsd".
    apply_fn: the model's apply_fn.
    tx: the optimizer.
    cfg: a GRPOConfig or OPSDConfig.
    rows: prompts per iteration (GRPO) or rows per iteration (OPSD), as `iteration` gets them.
    mesh: a mesh or None.
    state_sh: the state's sharding pytree.
    frozen_sh: the OPSD teacher's params sharding pytree.
  Returns:
    The jitted step, or None.
  Raises:
    ValueError: a micro-batch that the mesh's data x fsdp devices do not divide.
  """
  if mesh is None:
    return None
  if kind == "grpo":
    minibatch = min(cfg.minibatch_prompts, rows) * cfg.group_size
  else:
    minibatch = min(cfg.minibatch, rows)
  micro = cfg.micro_batch or minibatch
  n = mesh.shape["data"] * mesh.shape["fsdp"]
  if minibatch % micro or micro % n:
    raise ValueError(f"{kind} micro-batch of {micro} rows (minibatch {minibatch}) does not split "
                     f"over data x fsdp = {n} devices")
  if kind == "grpo":
    step = grpo.make_grpo_step(apply_fn, tx, cfg, minibatch // micro, state_sh.params)
    return sharding.jit_step(step, mesh, state_sh)
  step = opsd.make_opsd_step(apply_fn, tx, cfg, minibatch // micro, state_sh.params)
  return sharding.jit_teacher_step(step, mesh, state_sh, frozen_sh)


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
      `lib.checkpoint.Checkpointer(start_fresh=True)`).
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


def log_scalars(workdir: str, step: int, metrics: dict, prefix: str) -> None:
  """Writes the numeric `metrics` as TensorBoard scalars `<prefix><name>` at `step` and flushes.

  Args:
    workdir: the run directory (its TensorBoard writer).
    step: the x-axis value.
    metrics: name -> number (scalar arrays included).
    prefix: prepended to every name, e.g. "train/".
  """
  tb.scalars(workdir, step, metrics, prefix=prefix)
  tb.writer(workdir).flush()
