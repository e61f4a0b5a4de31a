"""The skeleton the GRPO (lib/rl/grpo.py) and OPSD (lib/rl/opsd.py) trainers share: the train
state with a frozen copy of the initial params (GRPO's reference, OPSD's teacher), the update step
jitted once per accumulation count, and that step jitted over a ("data", "fsdp") mesh instead.
The losses, rollouts and iterations stay in the trainers.

    step_fn = GRPOTrainer.mesh_step_fn(apply_fn, tx, cfg, prompts, mesh, state_sh)  # None: 1 device
    trainer = GRPOTrainer(apply_fn, sample_fn, state, tx, cfg, step_fn=step_fn)

A trainer names its step builder (`make_step`), whether that step takes the frozen params
(`takes_frozen_params`) and how many rows one optimizer step takes (`minibatch_rows`).
"""
from typing import Any, Callable

import jax
import jax.numpy as jnp
import optax

from lib.parallel import sharding
from lib.train.state import ApplyFn, TrainState


class RLTrainer:
  """Holds the train state, the sampler and the jitted update steps of an RL trainer.

  `step_fn` may be given pre-jitted (`mesh_step_fn` over a mesh); by default the update step is
  jitted plainly with the state donated, once per accumulation count.
  """
  kind = ""                     # "grpo" / "opsd", for error messages
  takes_frozen_params = False   # the step is step(state, frozen_params, batch), not step(state, batch)

  def __init__(self, apply_fn: ApplyFn, sample_fn: Callable, state: TrainState,
               tx: optax.GradientTransformation, cfg: Any, step_fn: Callable | None = None):
    self.apply_fn, self.sample_fn, self.state, self.tx, self.cfg = (
        apply_fn, sample_fn, state, tx, cfg)
    self._step_fn = step_fn
    self._steps: dict[int, Callable] = {}

  @staticmethod
  def make_step(apply_fn: ApplyFn, tx: optax.GradientTransformation, cfg: Any,
                accum_steps: int = 1, param_sharding: Any = None) -> Callable:
    """The trainer's unjitted update step (`make_grpo_step` / `make_opsd_step`)."""
    raise NotImplementedError

  @staticmethod
  def minibatch_rows(cfg: Any, rows: int) -> int:
    """Rows of one optimizer step when an iteration gets `rows` (prompts for GRPO, rows for
    OPSD)."""
    raise NotImplementedError

  def frozen_copy(self, params: Any = None) -> Any:
    """`params` (None: the state's own), copied: the update step donates the state, so the frozen
    params must own their buffers. With `cfg.frozen_dtype` (e.g. "bfloat16") the floating leaves
    are stored in that dtype: the same values wherever the model computes in it (`nnx_apply_fn`'s
    `compute_dtype` casts every param there first), in half the memory of float32.

    Args:
      params: a params pytree or None.
    Returns:
      The copied pytree.
    """
    dtype = getattr(self.cfg, "frozen_dtype", "")
    cast = lambda x: bool(dtype) and jnp.issubdtype(x.dtype, jnp.floating) and x.dtype != dtype
    copy = lambda x: x.astype(dtype) if cast(x) else jnp.copy(x)   # astype: a new buffer
    return jax.tree.map(copy, self.state.params if params is None else params)

  def _update(self, accum: int) -> Callable:
    if self._step_fn is not None:
      return self._step_fn
    if accum not in self._steps:
      self._steps[accum] = jax.jit(self.make_step(self.apply_fn, self.tx, self.cfg, accum),
                                   donate_argnums=0)
    return self._steps[accum]

  @classmethod
  def mesh_step_fn(cls, apply_fn: ApplyFn, tx: optax.GradientTransformation, cfg: Any,
                   rows: int, mesh: Any, state_sh: Any, frozen_sh: Any = None) -> Callable | None:
    """The update step jitted over `mesh` (batch over "data" x "fsdp", state kept on `state_sh`),
    for the trainer's `step_fn`; None without a mesh (the trainer then jits it on one device).

    Args:
      apply_fn: the model's apply_fn.
      tx: the optimizer.
      cfg: the trainer's config (GRPOConfig / OPSDConfig).
      rows: what `iteration` gets per call (GRPO: prompts; OPSD: rows).
      mesh: a mesh or None.
      state_sh: the state's sharding pytree.
      frozen_sh: the frozen params' sharding pytree (OPSD's teacher); None: `state_sh.params`.
    Returns:
      The jitted step, or None.
    Raises:
      ValueError: a micro-batch that the mesh's data x fsdp devices do not divide.
    """
    if mesh is None:
      return None
    minibatch = cls.minibatch_rows(cfg, rows)
    micro = cfg.micro_batch or minibatch
    n = mesh.shape["data"] * mesh.shape["fsdp"]
    if minibatch % micro or micro % n:
      raise ValueError(f"{cls.kind} micro-batch of {micro} rows (minibatch {minibatch}) does not "
                       f"split over data x fsdp = {n} devices")
    step = cls.make_step(apply_fn, tx, cfg, minibatch // micro, state_sh.params)
    if not cls.takes_frozen_params:
      return sharding.jit_step(step, mesh, state_sh)
    return sharding.jit_teacher_step(step, mesh, state_sh,
                                     state_sh.params if frozen_sh is None else frozen_sh)
