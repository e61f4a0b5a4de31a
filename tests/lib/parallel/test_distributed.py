"""Two JAX processes on this machine, two CPU devices each, joined by
`lib.parallel.distributed.initialize`
(launch.py's --jax_coordinator path) with gloo collectives, run the repository's real SFT and GRPO
steps (`make_sft_step` / `make_grpo_step` under `sharding.jit_step`, state from
`train_loop.create_state`) for two steps each on a 2 x 2 ("data", "fsdp") mesh, and save and restore
the train state with `lib.train.checkpoint`. One process with four forced CPU devices runs the same
steps on the same mesh shape and restores the two-process checkpoint.

Checked: the global batches both processes assemble (`shard_batch` of the whole batch, then
`shard_process_batch` of each process's own rows) equal the batch row for row; the two processes
end with identical losses and parameters; the two-process run equals the one-process run (float32;
tolerances and why at `_compare`); the restored state equals the saved one on both processes,
and the one process restores what two saved, onto the same mesh and onto a single device.

launch.py itself, run twice with --jax_coordinator, joins its two processes into one run of four
devices and finishes a smoke run in each.

XLA's device count and the distributed client are fixed at start-up, so each role runs in a
child process (this file run as a script); a free port is picked at run time, every child has a
deadline and is killed when it passes or a sibling fails, and a failure shows each child's tail.
"""
import os
import socket
import subprocess
import sys
import tempfile
import time

import numpy as np
import pytest

pytestmark = pytest.mark.long_module(110)   # scheduled first: tests/conftest.py

LR = 1e-2
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
DEADLINE_S = 240   # per group of children (each child takes about 20 CPU-seconds)


def _free_port() -> int:
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


def _tail(path: str, limit: int = 2500) -> str:
  with open(path, encoding="utf-8", errors="replace") as f:
    text = f.read()
  return text[-limit:]


def _run_group(cmds: list[tuple[list[str], int]], logdir: str) -> str | None:
  """Runs the (command, forced CPU devices) pairs side by side; None when all exit 0, else the
  failure with every child's log tail. A child that fails or outlives DEADLINE_S gets its
  siblings killed (a process waiting in a collective for a dead peer would otherwise hang until
  gloo's own timeout)."""
  procs, logs, first = [], [], len(os.listdir(logdir))
  codes = []
  try:
    for i, (cmd, devices) in enumerate(cmds):
      env = dict(os.environ, JAX_PLATFORMS="cpu", PYTHONPATH=ROOT,
                 XLA_FLAGS=os.environ.get("XLA_FLAGS", "") +
                 f" --xla_force_host_platform_device_count={devices}")
      logs.append(os.path.join(logdir, f"child{first + i}.log"))
      with open(logs[-1], "w", encoding="utf-8") as log:
        procs.append(subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env,
                                      cwd=ROOT))
    end = time.monotonic() + DEADLINE_S
    while True:
      codes = [p.poll() for p in procs]
      if all(c == 0 for c in codes):
        return None
      if any(c not in (None, 0) for c in codes) or time.monotonic() > end:
        break
      time.sleep(0.1)
  finally:
    for p in procs:
      if p.poll() is None:
        p.kill()
        p.wait()
  why = (f"passed the {DEADLINE_S}s deadline" if all(c in (None, 0) for c in codes)
         else "failed")
  parts = [f"a child {why}; exit codes {codes} (None: still running, killed)"]
  for (cmd, _), log in zip(cmds, logs):
    parts.append(f"--- {' '.join(cmd[2:])} (last lines of {log}):\n{_tail(log)}")
  return "\n".join(parts)


def _load(path: str) -> dict:
  with np.load(path) as z:
    return dict(z)


@pytest.fixture(scope="module")
def runs():
  """The two processes and the one process run side by side (the one waits for the two's
  checkpoint before restoring it); a coordinator port taken between picking and binding it is
  retried with another."""
  with tempfile.TemporaryDirectory(prefix="accord-mp-") as tmp:
    logdir = os.path.join(tmp, "logs")
    os.makedirs(logdir)
    t0 = time.monotonic()
    for attempt in range(3):
      out, port = os.path.join(tmp, str(attempt)), str(_free_port())
      os.makedirs(out)
      cmds = [([sys.executable, __file__, "multi", out, port, str(i)], 2) for i in range(2)]
      failure = _run_group(cmds + [([sys.executable, __file__, "single", out], 4)], logdir)
      if failure is None or "Address already in use" not in failure:
        break
    if failure is not None:
      pytest.fail(failure, pytrace=False)
    print(f"three children {time.monotonic() - t0:.1f}s")
    yield {name: _load(os.path.join(out, f"{name}.npz")) for name in ("multi0", "multi1",
                                                                        "single")}


def test_both_processes_end_identical(runs):
  a, b = runs["multi0"], runs["multi1"]
  assert sorted(a) == sorted(b) and len(a) > 20
  for k in a:
    np.testing.assert_array_equal(a[k], b[k], err_msg=k)


def _compare(multi: dict, single: dict, trainer: str) -> None:
  # The same HLO, partitioned the same way over the same 2 x 2 mesh: every device runs the same
  # arithmetic, and only the cross-device reductions differ (gloo over TCP vs XLA's in-process
  # all-reduce), which may add in another order: a few float32 ulps in a gradient. Losses and
  # gradient norms: rtol 1e-6 (~8 ulps). Parameters after two AdamW steps: Adam divides by
  # sqrt(v) + eps, so a gradient element near eps moves its update by up to ~lr times the
  # relative error; atol 1e-4 x lr, while a wrong or missing batch shard moves them by ~lr.
  for key in ("loss", "grad_norm"):
    np.testing.assert_allclose(multi[f"{trainer}/{key}"], single[f"{trainer}/{key}"], rtol=1e-6,
                               err_msg=f"{trainer} {key}")
  params = [k for k in single if k.startswith(f"{trainer}/params")]
  assert len(params) > 5, params
  for k in params:
    np.testing.assert_allclose(multi[k], single[k], rtol=0, atol=1e-4 * LR, err_msg=k)


def test_sft_two_processes_equal_one_process(runs):
  _compare(runs["multi0"], runs["single"], "sft")
  assert runs["single"]["sft/loss"][0] != runs["single"]["sft/loss"][1]


def test_grpo_two_processes_equal_one_process(runs):
  _compare(runs["multi0"], runs["single"], "grpo")


def test_checkpoint_saved_by_two_restores_anywhere(runs):
  multi, single = runs["multi0"], runs["single"]
  saved = [k for k in multi if k.startswith("saved/")]
  assert len(saved) > 10   # params, both AdamW moments and the step
  for k in saved:
    name = k[len("saved/"):]
    np.testing.assert_array_equal(multi[f"restored/{name}"], multi[k], err_msg=k)
    np.testing.assert_array_equal(single[f"from_two_on_mesh/{name}"], multi[k], err_msg=k)
    np.testing.assert_array_equal(single[f"from_two_on_one_device/{name}"], multi[k], err_msg=k)
  assert int(multi["saved_meta/step"]) == 2 == int(single["from_two_meta/step"])


def test_launch_py_joins_two_processes(tmp_path):
  """launch.py's own --jax_coordinator path: two smoke runs join one run of four devices."""
  port = str(_free_port())
  cmds = [([sys.executable, "launch.py", "--config=configs/smoke.py:debug=True,tasks=2",
            f"--workdir={tmp_path}/p{i}", f"--jax_coordinator=127.0.0.1:{port}",
            "--jax_num_processes=2", f"--jax_process_id={i}"], 2) for i in range(2)]
  logdir = tmp_path / "logs"
  logdir.mkdir()
  failure = _run_group(cmds, str(logdir))
  assert failure is None, failure
  for i in range(2):
    text = (logdir / f"child{i}.log").read_text()
    assert f"[launch] process {i} of 2 joined: 4 devices, 2 here" in text, text[-2000:]
    assert (tmp_path / f"p{i}" / "results.jsonl").exists()


def test_check_args_one_line_errors():
  from lib.parallel import distributed
  assert distributed.check_args(None, None, None) is None
  assert distributed.check_args("auto", None, None) is None
  assert distributed.check_args("h:1", 2, 1) is None
  assert "needs --jax_num_processes" in distributed.check_args("h:1", None, 0)
  assert "not in [0" in distributed.check_args("h:1", 2, 2)
  assert "host:port" in distributed.check_args("h", 2, 0)
  assert "need --jax_coordinator" in distributed.check_args(None, 2, 0)
  with pytest.raises(ValueError, match="needs --jax_num_processes"):
    distributed.initialize("127.0.0.1:1", None, None)


def test_a_failed_or_hung_child_gets_its_siblings_killed_and_its_tail_shown(tmp_path,
                                                                             monkeypatch):
  hang = [sys.executable, "-c", "import time; print('waiting', flush=True); time.sleep(600)"]
  fail = [sys.executable, "-c", "import sys; sys.exit('peer died: no such device')"]
  t0 = time.monotonic()
  failure = _run_group([(hang, 1), (fail, 1)], str(tmp_path))
  assert time.monotonic() - t0 < 30
  assert "a child failed; exit codes [None, 1]" in failure
  assert "peer died: no such device" in failure and "waiting" in failure
  monkeypatch.setattr(sys.modules[__name__], "DEADLINE_S", 1)
  failure = _run_group([(hang, 1)], str(tmp_path))
  assert "a child passed the 1s deadline; exit codes [None]" in failure


# ---- the children -------------------------------------------------------------------------------


def _host(tree, prefix: str) -> dict:
  """{prefix/path: numpy array} of a pytree of global arrays, gathered on every process."""
  import jax
  from jax.experimental import multihost_utils
  gathered = multihost_utils.process_allgather(tree, tiled=True)
  flat = jax.tree_util.tree_flatten_with_path(gathered)[0]
  return {f"{prefix}{jax.tree_util.keystr(path)}": np.asarray(x) for path, x in flat}


def _feed(batch: dict, mesh, local: bool) -> dict:
  """The global batch, from the whole batch or from this process's rows; checked row for row."""
  from lib.parallel import sharding
  n = len(next(iter(batch.values())))
  rows = sharding.process_rows(n, mesh)
  feed = (sharding.shard_process_batch({k: v[rows] for k, v in batch.items()}, mesh) if local
          else sharding.shard_batch(batch, mesh))
  for k, x in feed.items():   # each process checks its own shards; together they cover all rows
    assert x.shape == batch[k].shape, (k, x.shape)
    for shard in x.addressable_shards:
      want = batch[k][shard.index].astype(x.dtype)
      assert np.array_equal(np.asarray(shard.data), want), f"global batch {k} assembled wrongly"
  return feed


def _sft_batch(rng) -> dict:
  ids = rng.integers(3, 128, (16, 12)).astype(np.int32)
  attn = (np.arange(12)[None] < rng.integers(6, 13, (16, 1))).astype(np.int32)
  return {"input_ids": ids, "attention_mask": attn, "loss_mask": attn * (np.arange(12)[None] >= 4)}


def _grpo_batch(rng) -> dict:
  ids = rng.integers(3, 128, (16, 11)).astype(np.int32)
  resp = (np.arange(5)[None] < rng.integers(1, 6, (16, 1))).astype(np.int32)
  # float64 on purpose: shard_batch must hand JAX the float32 it will hold
  # (lib/parallel/sharding.py).
  logp = -np.log(128) + rng.normal(0, 0.1, (2, 16, 5))
  return {"input_ids": ids, "attention_mask": np.concatenate([np.ones((16, 6), np.int32), resp], 1),
          "response_mask": resp, "old_logp": logp[0], "ref_logp": logp[1],
          "advantages": rng.normal(size=(16,)).astype(np.float32)}


def _wait_for(path: str) -> None:
  end = time.monotonic() + DEADLINE_S
  while not os.path.exists(path):
    if time.monotonic() > end:
      raise TimeoutError(f"{path} did not appear within {DEADLINE_S}s")
    time.sleep(0.2)


def _child(role: str, out: str, port: str | None = None, pid: str | None = None) -> None:
  import jax
  from flax import nnx

  from lib import models
  from lib.parallel import distributed, sharding
  from lib.rl import grpo
  from lib.sft import step as sft
  from lib.train import optim, setup as train_loop
  from lib.train.checkpoint import Checkpointer
  from lib.train.state import TrainState, nnx_apply_fn

  if role == "multi":
    distributed.initialize(f"127.0.0.1:{port}", 2, int(pid), timeout_s=60)
    assert jax.process_count() == 2 and jax.local_device_count() == 2, jax.devices()
  assert jax.device_count() == 4, jax.devices()
  mesh = sharding.make_mesh(data=2, fsdp=2)
  apply_fn, params = nnx_apply_fn(models.build(models.preset("qwen3-tiny", num_layers=1),
                                                 rngs=nnx.Rngs(0)))
  params = jax.tree.map(np.asarray, params)   # host copies: every state below starts from these
  tx = optim.adamw(lr=LR, total_steps=10, warmup_frac=0.0, schedule="cosine")
  record, states = {}, {}
  makers = {"sft": (lambda sh: sft.make_sft_step(apply_fn, tx, 2, sh), _sft_batch),
            "grpo": (lambda sh: grpo.make_grpo_step(
                apply_fn, tx, grpo.GRPOConfig(group_size=4, kl_coef=0.05, entropy_coef=0.01), 2,
                sh), _grpo_batch)}
  for trainer, (make, batch_fn) in makers.items():
    state, state_sh = train_loop.create_state(params, tx, mesh)
    step = sharding.jit_step(make(state_sh.params), mesh, state_sh)
    rng, metrics = np.random.default_rng(1), []
    for i in range(2):   # step 1 from the whole batch, step 2 from each process's own rows
      state, m = step(state, _feed(batch_fn(rng), mesh, local=i == 1))
      metrics.append({k: float(m[k]) for k in ("loss", "grad_norm")})
    for k in ("loss", "grad_norm"):
      record[f"{trainer}/{k}"] = np.array([m[k] for m in metrics])
    record.update(_host(state.params, f"{trainer}/params"))
    states[trainer] = (state, state_sh)

  state, state_sh = states["sft"]
  template = train_loop.create_state(params, tx, mesh)[0]
  if role == "multi":
    ckpt = Checkpointer(os.path.join(out, "ckpt"))
    ckpt.save(2, state, metadata={"note": "two processes"})
    restored, meta = Checkpointer(os.path.join(out, "ckpt")).restore(template)
    record.update(_host(state, "saved/"))
    record.update(_host(restored, "restored/"))
    record["saved_meta/step"] = np.array(meta["step"])
    assert all(s.sharding == t.sharding for s, t in zip(jax.tree.leaves(restored),
                                                         jax.tree.leaves(state)))
  else:
    _wait_for(os.path.join(out, "multi0.npz"))   # written after the two saved and restored
    ckpt = Checkpointer(os.path.join(out, "ckpt"))
    on_mesh, meta = ckpt.restore(template)
    on_one, _ = ckpt.restore(TrainState.create(params, tx))
    assert all(len(x.devices()) == 1 for x in jax.tree.leaves(on_one)), "not on one device"
    record.update(_host(on_mesh, "from_two_on_mesh/"))
    record.update(_host(on_one, "from_two_on_one_device/"))
    record["from_two_meta/step"] = np.array(meta["step"])
  name = f"{role}{pid or ''}"
  np.savez(os.path.join(out, f"{name}.npz.tmp.npz"), **record)
  os.replace(os.path.join(out, f"{name}.npz.tmp.npz"), os.path.join(out, f"{name}.npz"))
  print(f"{name} ok", flush=True)


if __name__ == "__main__":
  _child(*sys.argv[1:])
