"""ConPAct rollouts against a served Flax model: the repo's OpenAI-compatible server
(experiments/serve.py) runs as a separate process with the embedded tiny random model, and the
ConPAct evaluation (configs/conpact/openai.py) talks to it over HTTP at temperature 0; the same
evaluation with the in-process Flax backend on the weights the server saved must write the same
results.jsonl rows, timings and the backend's name aside, also with the envs in worker processes.

Both sides serve every request alone (max_batch = min_batch = 1), so a request's sampler shapes
depend on its own prompt only, never on which other requests share its batch. In batches of
several rows the padded prompt length and row count follow the batch, which the server's batching
window and the loop's steps choose differently, and a greedy argmax could then flip on a float32
rounding difference. Measured once on this machine (2 CPU cores): with the default batching (server
max_batch 32, in-process 16) the 12 rows of 2 instances x 2 rollouts x 3 conditions were equal
too, but nothing guarantees that, so the test fixes the shapes."""
import json
import os
import pathlib
import subprocess
import sys
import time

import pytest

from configs.conpact import openai as conpact_openai
from experiments.conpact import eval as conpact_eval
from lib.run.config_blocks import backend_config

ROOT = pathlib.Path(__file__).resolve().parents[3]
KEEP = ("react", "assertion", "conpact_i")
TIMING_FIELDS = ("wall_s", "model_latency_s")


@pytest.fixture(scope="module")
def served(tmp_path_factory):
  """(base url, checkpoint dir) of a server process; terminated (exit 0) after the tests."""
  workdir = tmp_path_factory.mktemp("served") / "serve"
  log = workdir.parent / "serve.out"
  with open(log, "w") as out:
    proc = subprocess.Popen(
        [sys.executable, "launch.py", "--config=configs/serve.py:debug=True",
         f"--workdir={workdir}", "--config.duration_s=0", "--config.min_batch=1",
         "--config.max_batch=1"], cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
        env={**os.environ, "JAX_PLATFORMS": "cpu"})
  info_path = workdir / "server.json"
  deadline = time.time() + 240
  try:
    while not info_path.exists():   # written once the server listens (the model saved before)
      if proc.poll() is not None or time.time() > deadline:
        raise RuntimeError("server did not start:\n" + log.read_text()[-3000:])
      time.sleep(0.2)
    yield json.loads(info_path.read_text())["url"], str(workdir / "tiny_model")
  finally:
    proc.terminate()
    assert proc.wait(timeout=120) == 0, log.read_text()[-3000:]


def _config(url: str, checkpoint: str | None, executor: str = "inline"):
  """The ConPAct eval over the served model (checkpoint None) or in-process on `checkpoint`:
  one Sokoban instance, one rollout, three conditions, A = C = 3, greedy, 24 tokens a reply."""
  config = conpact_openai.get_config(f"debug=True,base_url={url},temperature=0.0,max_tokens=24")
  config.instances, config.rollouts = 1, 1
  config.conditions = [x for x in config.conditions if x["name"] in KEEP]
  config.label = "tiny random Flax model"
  config.host.executor = executor
  if executor != "inline":
    config.host.workers = 2
  if checkpoint is not None:
    config.backend = backend_config("flax", model=dict(checkpoint=checkpoint), max_batch=1,
                                    min_batch=1)
  return config


def _rows(workdir) -> dict:
  """Rows by key, without timings and the backend's name (openai_http vs flax)."""
  out = {}
  with open(os.path.join(workdir, "results.jsonl"), encoding="utf-8") as f:
    for line in f:
      r = json.loads(line)
      r = {k: v for k, v in r.items() if k not in TIMING_FIELDS + ("backend",)}
      r["transcript"] = [{k: v for k, v in e.items() if k != "latency_s"}
                         for e in r["transcript"]]
      out[(r["env"], r["condition"], r["instance"], r["rollout"])] = r
  return out


def test_served_rows_equal_in_process_flax_rows(served, tmp_path):
  url, checkpoint = served
  conpact_eval.run(_config(url, None), str(tmp_path / "served"))
  conpact_eval.run(_config(url, checkpoint), str(tmp_path / "direct"))
  a, b = _rows(tmp_path / "served"), _rows(tmp_path / "direct")
  assert sorted(a) == sorted(b) and len(a) == len(KEEP)
  calls = [e for r in a.values() for e in r["transcript"] if e["type"] == "call"]
  assert calls and all(e["error"] is None and e["output_tokens"] for e in calls)
  assert all(r["status"] != "backend_error" for r in a.values())
  for key in a:
    assert a[key] == b[key], key


@pytest.mark.parametrize("executor", ["processes", "ray"])
# ray.init starts Ray's daemons with subprocess (fork, then exec at once), which JAX's fork warning
# cannot tell from a bare fork of a multithreaded process.
@pytest.mark.filterwarnings(r"ignore:os\.fork\(\) was called:RuntimeWarning")
def test_served_rows_equal_with_envs_in_workers(served, tmp_path, executor):
  url, _ = served
  ray = pytest.importorskip("ray") if executor == "ray" else None
  conpact_eval.run(_config(url, None), str(tmp_path / "inline"))
  try:   # the ray executor starts a local Ray (host.ray_address ""); it ends with the test
    conpact_eval.run(_config(url, None, executor=executor), str(tmp_path / "workers"))
  finally:
    if ray is not None:
      ray.shutdown()
  assert _rows(tmp_path / "inline") == _rows(tmp_path / "workers")
