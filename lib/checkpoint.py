"""Checkpoints of arbitrary train-state pytrees on orbax-checkpoint.

    ckpt = Checkpointer(os.path.join(workdir, "ckpt"), max_to_keep=3)
    start = 0
    if ckpt.latest_step() is not None:
      state, meta = ckpt.restore(template=state)       # resume
      start = meta["step"]
    ...
    ckpt.save(step, state, metadata={"tokens_seen": n})

`template` gives the tree structure, shapes, dtypes and shardings to restore into (a freshly
initialised state, or `jax.eval_shape` of one). Saves are synchronous by default so a run killed
right after `save` returns still has that checkpoint.
"""
import os
from typing import Any

import jax
import orbax.checkpoint as ocp


class Checkpointer:
  """Keeps the last `max_to_keep` checkpoints of a pytree state plus JSON metadata."""

  def __init__(self, directory: str, max_to_keep: int = 3, async_save: bool = False):
    self.directory = os.path.abspath(directory)
    options = ocp.CheckpointManagerOptions(max_to_keep=max_to_keep, create=True,
                                           enable_async_checkpointing=async_save)
    self._manager = ocp.CheckpointManager(self.directory, options=options)

  def save(self, step: int, state: Any, metadata: dict | None = None) -> None:
    meta = {"step": int(step), **(metadata or {})}
    self._manager.save(int(step), args=ocp.args.Composite(
        state=ocp.args.StandardSave(state), metadata=ocp.args.JsonSave(meta)))
    self._manager.wait_until_finished()

  def latest_step(self) -> int | None:
    return self._manager.latest_step()

  def all_steps(self) -> list[int]:
    return list(self._manager.all_steps())

  def restore(self, template: Any, step: int | None = None) -> tuple[Any, dict]:
    """Restores `step` (default: latest) into the structure of `template`."""
    step = self.latest_step() if step is None else step
    if step is None:
      raise FileNotFoundError(f"no checkpoint in {self.directory}")
    abstract = jax.tree.map(ocp.utils.to_shape_dtype_struct, template)
    out = self._manager.restore(step, args=ocp.args.Composite(
        state=ocp.args.StandardRestore(abstract), metadata=ocp.args.JsonRestore()))
    return out["state"], dict(out["metadata"])

  def close(self) -> None:
    self._manager.close()
