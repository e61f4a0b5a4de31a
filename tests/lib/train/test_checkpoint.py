"""Checkpoint/resume: 10 straight steps == 5 steps, save, restore in a fresh process, 5 more;
a damaged latest step falls back to the newest intact one; none intact is one clear error."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))

TRAIN = textwrap.dedent("""
    import sys
    import jax, jax.numpy as jnp, numpy as np, optax
    from lib.train.checkpoint import Checkpointer

    opt = optax.adamw(1e-2)

    @jax.jit
    def train_step(state):
      # Data is a pure function of the step, as in a real input pipeline keyed by step.
      k = jax.random.fold_in(jax.random.key(1), state["step"])
      x = jax.random.normal(k, (16, 8))
      y = jnp.sin(x[:, :4])
      loss = lambda p: jnp.mean((x @ p["w"] + p["b"] - y) ** 2)
      g = jax.grad(loss)(state["params"])
      upd, opt_state = opt.update(g, state["opt"], state["params"])
      return {"params": optax.apply_updates(state["params"], upd), "opt": opt_state,
              "step": state["step"] + 1}

    def run(mode, ckdir, out):
      params = {"w": jax.random.normal(jax.random.key(0), (8, 4)), "b": jnp.zeros(4)}
      state = {"params": params, "opt": opt.init(params), "step": jnp.int32(0)}
      ckpt = Checkpointer(ckdir, max_to_keep=2)
      if mode == "resume":
        state, meta = ckpt.restore(template=state)
        assert meta["step"] == 5, meta
      n = {"full": 10, "first": 5, "resume": 5}[mode]
      for _ in range(n):
        state = train_step(state)
      if mode == "first":
        ckpt.save(int(state["step"]), state, metadata={"note": "half"})
      ckpt.close()
      np.savez(out, w=np.asarray(state["params"]["w"]), b=np.asarray(state["params"]["b"]),
               step=int(state["step"]))

    # argv: (mode, checkpoint dir, output .npz) triples, run in order in this process
    for i in range(1, len(sys.argv), 3):
      run(*sys.argv[i:i + 3])
""")


def _run(tmp_path, *args):
  script = tmp_path / "train.py"
  script.write_text(TRAIN)
  env = dict(os.environ, PYTHONPATH=ROOT, JAX_PLATFORMS="cpu")
  subprocess.run([sys.executable, str(script), *args], check=True, env=env, cwd=ROOT,
                 timeout=300)


def test_resume_is_bitwise_identical(tmp_path):
  ck = str(tmp_path / "ckpt")
  # the straight run and the first half share a process; the resume has a fresh one
  _run(tmp_path, "full", str(tmp_path / "unused"), str(tmp_path / "full.npz"),
       "first", ck, str(tmp_path / "first.npz"))
  _run(tmp_path, "resume", ck, str(tmp_path / "resumed.npz"))
  full, resumed = np.load(tmp_path / "full.npz"), np.load(tmp_path / "resumed.npz")
  assert int(resumed["step"]) == 10
  np.testing.assert_array_equal(full["w"], resumed["w"])
  np.testing.assert_array_equal(full["b"], resumed["b"])
  # The first half really differs from the end point, so equality above is not vacuous.
  assert not np.array_equal(np.load(tmp_path / "first.npz")["w"], full["w"])


def test_keeps_last_n_and_reports_latest(tmp_path):
  import jax.numpy as jnp
  from lib.train.checkpoint import Checkpointer
  ckpt = Checkpointer(str(tmp_path / "c"), max_to_keep=2)
  assert ckpt.latest_step() is None
  for step in (1, 2, 3):
    ckpt.save(step, {"x": jnp.full((2,), step)})
  assert ckpt.all_steps() == [2, 3] and ckpt.latest_step() == 3
  state, meta = ckpt.restore({"x": jnp.zeros((2,))}, step=2)
  np.testing.assert_array_equal(state["x"], [2, 2])
  assert meta["step"] == 2


def _three_steps(directory):
  import jax.numpy as jnp
  from lib.train.checkpoint import Checkpointer
  ckpt = Checkpointer(directory, max_to_keep=3)
  for step in (1, 2, 3):
    ckpt.save(step, {"x": jnp.full((4,), step), "y": {"z": jnp.arange(3.0) * step}},
              metadata={"note": step})
  ckpt.close()
  return {"x": jnp.zeros((4,), jnp.int32), "y": {"z": jnp.zeros((3,))}}


def _damage(step_dir, kind):
  import glob
  import shutil
  if kind == "truncated_arrays":
    files = glob.glob(os.path.join(step_dir, "state", "**", "d", "*"), recursive=True)
    assert files
    for f in files:
      with open(f, "r+b") as fh:
        fh.truncate(10)
  elif kind == "missing_METADATA":
    os.remove(os.path.join(step_dir, "state", "_METADATA"))
  elif kind == "empty_step_dir":
    shutil.rmtree(step_dir)
    os.mkdir(step_dir)
  elif kind == "truncated_metadata_json":
    with open(os.path.join(step_dir, "metadata", "metadata"), "r+b") as fh:
      fh.truncate(5)


@pytest.mark.parametrize("kind", ["truncated_arrays", "missing_METADATA", "empty_step_dir",
                                  "truncated_metadata_json"])
def test_damaged_latest_step_falls_back_to_newest_intact(tmp_path, caplog, kind):
  from lib.train import checkpoint
  from lib.train.checkpoint import Checkpointer
  directory = str(tmp_path / "c")
  template = _three_steps(directory)
  _damage(os.path.join(directory, "3"), kind)
  ckpt = Checkpointer(directory, max_to_keep=3)
  with caplog.at_level("WARNING"):
    state, meta = ckpt.restore(template)
  assert meta == {"step": 2, "note": 2}
  np.testing.assert_array_equal(state["x"], [2, 2, 2, 2])
  ours = [r.getMessage() for r in caplog.records if r.pathname == checkpoint.__file__]
  assert len(ours) == 1 and "step 3:" in ours[0] and "restored step 2" in ours[0], ours
  # The damaged step is kept aside, and the run can write step 3 again.
  assert os.listdir(directory + ".damaged") and ckpt.all_steps() == [1, 2]
  ckpt.save(3, state, metadata={"note": "again"})
  assert ckpt.restore(template)[1]["note"] == "again"


def test_no_intact_step_is_one_line_error_and_start_fresh_recovers(tmp_path):
  from lib.train.checkpoint import CheckpointError, Checkpointer
  directory = str(tmp_path / "c")
  template = _three_steps(directory)
  for step, kind in ((1, "truncated_arrays"), (2, "missing_METADATA"), (3, "empty_step_dir")):
    _damage(os.path.join(directory, str(step)), kind)
  with pytest.raises(CheckpointError) as err:
    Checkpointer(directory).restore(template)
  message = str(err.value)
  assert "\n" not in message and "start_fresh=True" in message
  assert all(f"step {s}:" in message for s in (1, 2, 3))
  fresh = Checkpointer(directory, start_fresh=True)
  assert fresh.latest_step() is None
  assert [p for p in os.listdir(tmp_path) if p.startswith("c.discarded-")]  # nothing deleted
