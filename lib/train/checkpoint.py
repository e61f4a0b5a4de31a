"""Checkpoints of arbitrary train-state pytrees on orbax-checkpoint, with damage fallback.

    ckpt = Checkpointer(os.path.join(workdir, "ckpt"), max_to_keep=3)
    start = 0
    if ckpt.latest_step() is not None:
      state, meta = ckpt.restore(template=state)       # resume
      start = meta["step"]
    ...
    ckpt.save(step, state, metadata={"tokens_seen": n})

`template` gives the tree structure, shapes, dtypes and shardings to restore into (a freshly
initialised state, or `jax.eval_shape` of one); NumPy leaves restore onto this process's first
device. A checkpoint saved by several processes (each writing its shards) restores into any
template: one process, another mesh, one device. Saves are synchronous by default so a run killed
right after `save` returns still has that checkpoint.

A damaged latest checkpoint (empty step directory, missing `_METADATA`, truncated JSON or array
files) does not stop a resume: `restore()` checks each step from the newest down, moves damaged
steps aside to `<directory>.damaged/` (so later saves can reuse their step numbers) and restores
the newest intact one with one warning naming what was wrong. When no step is intact it raises
`CheckpointError` (one line); `Checkpointer(..., start_fresh=True)` then moves the old
checkpoints to `<directory>.discarded-<time>` and the run starts from step 0. Nothing is deleted.
"""
import json
import os
import shutil
import time
from typing import Any

import jax
import numpy as np
import orbax.checkpoint as ocp
from absl import logging

_STATE, _METADATA = "state", "metadata"
# The JSON files of one step, relative to the step directory; orbax writes each whole.
_JSON_FILES = ("_CHECKPOINT_METADATA", f"{_STATE}/_METADATA", f"{_METADATA}/metadata")


class CheckpointError(RuntimeError):
  """No usable checkpoint; the message is one line saying what was wrong and how to start over."""


class Checkpointer:
  """Keeps the last `max_to_keep` checkpoints of a pytree state plus JSON metadata.

  Args:
    directory: where the step directories live (created if missing).
    max_to_keep: how many of the newest steps orbax keeps.
    start_fresh: move any existing checkpoints aside (to `<directory>.discarded-<time>`) so the
      run starts from step 0; the way out after a `CheckpointError`.
  """

  def __init__(self, directory: str, max_to_keep: int = 3,
               start_fresh: bool = False):
    self.directory = os.path.abspath(directory)
    if start_fresh and os.path.isdir(self.directory) and os.listdir(self.directory):
      aside = f"{self.directory}.discarded-{time.strftime('%Y%m%d-%H%M%S')}"
      if jax.process_index() == 0:
        os.rename(self.directory, aside)
      logging.warning("start_fresh: moved the checkpoints in %s to %s", self.directory, aside)
    # Synchronous: `save` returns once the step is on disk, so a crash right after cannot lose it.
    options = ocp.CheckpointManagerOptions(max_to_keep=max_to_keep, create=True,
                                           enable_async_checkpointing=False)
    self._manager = ocp.CheckpointManager(self.directory, options=options)

  def save(self, step: int, state: Any, metadata: dict | None = None) -> None:
    """Writes `state` and `{"step": step, **metadata}` as checkpoint `step`.

    Args:
      step: the step number (the step directory's name).
      state: the pytree to save (jax/numpy arrays and scalars).
      metadata: extra JSON-serialisable fields; its own "step" key would override `step`.
    """
    meta = {"step": int(step), **(metadata or {})}
    self._manager.save(int(step), args=ocp.args.Composite(
        state=ocp.args.StandardSave(state), metadata=ocp.args.JsonSave(meta)))
    self._manager.wait_until_finished()

  def latest_step(self) -> int | None:
    """The newest saved step, or None when there is none (intact or not)."""
    return self._manager.latest_step()

  def all_steps(self) -> list[int]:
    """Every saved step number orbax knows of (damaged ones included)."""
    return list(self._manager.all_steps())

  def restore(self, template: Any, step: int | None = None) -> tuple[Any, dict]:
    """Restores a checkpoint into the structure of `template`.

    Args:
      template: a pytree with the structure, shapes, dtypes and shardings of the saved state.
      step: the step to restore; default the newest intact one (damaged newer steps are moved
        to `<directory>.damaged/` with one warning).

    Returns:
      (state, metadata): the restored pytree and the JSON metadata (with its "step").

    Raises:
      FileNotFoundError: the directory holds no checkpoint at all.
      CheckpointError: `step` was given and is damaged, or no step is intact.
    """
    if step is not None:
      state, meta, problem = self._try_restore(step, template)
      if problem is not None:
        raise CheckpointError(f"checkpoint step {step} in {self.directory} is damaged: {problem}")
      return state, meta
    steps = sorted(self.all_steps(), reverse=True)
    if not steps:
      raise FileNotFoundError(f"no checkpoint in {self.directory}")
    problems: list[str] = []
    for candidate in steps:
      state, meta, problem = self._try_restore(candidate, template)
      if problem is None:
        if problems:
          self._set_aside_damaged(steps[:len(problems)])
          logging.warning("checkpoint %s: %s; restored step %d instead (damaged steps moved to "
                          "%s.damaged)", self.directory, "; ".join(problems), candidate,
                          self.directory)
        return state, meta
      problems.append(f"step {candidate}: {problem}")
    raise CheckpointError(
        f"no intact checkpoint in {self.directory} ({'; '.join(problems)}); to start fresh, "
        f"move that directory aside or pass Checkpointer(..., start_fresh=True)")

  def _try_restore(self, step: int, template: Any) -> tuple[Any, dict | None, str | None]:
    """Returns (state, metadata, None), or (None, None, what is wrong with the step)."""
    problem = _step_damage(os.path.join(self.directory, str(step)))
    if problem is not None:
      return None, None, problem
    abstract = jax.tree.map(_restore_target, template)
    try:
      out = self._manager.restore(step, args=ocp.args.Composite(
          state=ocp.args.StandardRestore(abstract), metadata=ocp.args.JsonRestore()))
    # orbax and tensorstore raise many unrelated types (ValueError, KeyError, OSError,
    # JSONDecodeError, ...) for unreadable data; each is reported, not swallowed.
    except Exception as e:  # pylint: disable=broad-except
      return None, None, f"orbax cannot read it ({type(e).__name__}: {_first_line(e)})"
    return out[_STATE], dict(out[_METADATA]), None

  def _set_aside_damaged(self, steps: list[int]) -> None:
    if jax.process_index() == 0:
      aside = f"{self.directory}.damaged"
      os.makedirs(aside, exist_ok=True)
      for step in steps:
        target = os.path.join(aside, f"{step}-{time.strftime('%Y%m%d-%H%M%S')}")
        shutil.move(os.path.join(self.directory, str(step)), target)
    self._manager.reload()

  def close(self) -> None:
    """Waits for pending writes and closes the orbax manager."""
    self._manager.close()


def _restore_target(leaf: Any) -> Any:
  """The restore target of one template leaf: its shape, dtype and sharding; a NumPy array goes
  to this process's first device. Without a sharding, orbax falls back to the one saved in the
  checkpoint, whose devices need not exist here (a checkpoint saved by several processes,
  restored by one), and reports a topology mismatch."""
  if isinstance(leaf, np.ndarray):
    return jax.ShapeDtypeStruct(leaf.shape, leaf.dtype,
                                sharding=jax.sharding.SingleDeviceSharding(jax.local_devices()[0]))
  return ocp.utils.to_shape_dtype_struct(leaf)


def _step_damage(step_dir: str) -> str | None:
  """Cheap structural check of one orbax step directory, before orbax reads it.

  Args:
    step_dir: `<directory>/<step>` as written by `Checkpointer.save`.

  Returns:
    None when the layout looks whole, else a short description of the damage (array contents
    are checked by the restore itself).
  """
  if not os.path.isdir(step_dir) or not os.listdir(step_dir):
    return "empty step directory"
  for item in (_STATE, _METADATA):
    if not os.path.isdir(os.path.join(step_dir, item)):
      return f"missing {item}/"
  for name in _JSON_FILES:
    path = os.path.join(step_dir, name)
    if not os.path.exists(path):
      if name == "_CHECKPOINT_METADATA":
        continue  # written by newer orbax versions only; not needed to restore
      return f"missing {name}"
    try:
      with open(path, encoding="utf-8") as f:
        json.load(f)
    except (ValueError, OSError) as e:
      return f"truncated or invalid {name} ({_first_line(e)})"
  return None


def _first_line(error: BaseException, limit: int = 160) -> str:
  text = str(error).strip().splitlines()
  line = text[0] if text else type(error).__name__
  return line if len(line) <= limit else line[:limit - 3] + "..."
