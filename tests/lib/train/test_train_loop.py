"""lib/train/setup.resume: resuming, and `config.start_fresh` as the way out of unusable
checkpoints."""
import glob
import os

import jax.numpy as jnp
import ml_collections
import numpy as np
import pytest

from lib.train import setup as train_loop
from lib.train.checkpoint import CheckpointError, Checkpointer


def _saved_steps(workdir, steps=(1, 2)):
  ckpt = Checkpointer(os.path.join(workdir, "ckpt"))
  for step in steps:
    ckpt.save(step, {"x": jnp.full((3,), step)}, metadata={"note": step})
  ckpt.close()
  return {"x": jnp.zeros((3,), jnp.int32)}


def _truncate_arrays(workdir):
  files = glob.glob(os.path.join(workdir, "ckpt", "*", "state", "**", "d", "*"), recursive=True)
  assert files
  for f in files:
    with open(f, "r+b") as fh:
      fh.truncate(10)


def test_resume_restores_the_latest_step(tmp_path):
  template = _saved_steps(str(tmp_path))
  ckpt, state, start, meta = train_loop.resume(str(tmp_path), template)
  ckpt.close()
  assert start == 2 and meta["note"] == 2
  np.testing.assert_array_equal(state["x"], [2, 2, 2])


def test_no_intact_checkpoint_names_the_config_switch_and_start_fresh_recovers(tmp_path):
  template = _saved_steps(str(tmp_path))
  _truncate_arrays(str(tmp_path))
  with pytest.raises(CheckpointError) as err:
    train_loop.resume(str(tmp_path), template)
  assert "\n" not in str(err.value) and "--config.start_fresh=True" in str(err.value)
  ckpt, state, start, meta = train_loop.resume(str(tmp_path), template, start_fresh=True)
  ckpt.close()
  assert (start, meta) == (0, {}) and state is template
  assert glob.glob(str(tmp_path / "ckpt.discarded-*"))   # moved aside, not deleted


def test_fresh_start_reads_the_config_field():
  c = ml_collections.ConfigDict({"seed": 0})
  assert train_loop.fresh_start(c) is False
  c.start_fresh = True
  assert train_loop.fresh_start(c) is True
