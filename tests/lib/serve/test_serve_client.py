"""The HTTP client against the real `experiments/serve.py` server (tiny random model) on loopback,
including the fault test: the server is killed mid-run, the client retries and records failed
calls, the host-loop episodes end as `backend_error`, finished rows stay intact, a rerun resumes."""
import json
import os
import pathlib
import subprocess
import sys
import threading
import time
import urllib.request

import numpy as np
import pytest

from envs.toy.guess_env import GuessEnv, parse_guess
from lib.backends.flax_backend import FlaxBackend
from lib.backends.openai_http import OpenAIBackend
from lib.backends.protocol import Backend, SamplingParams
from lib.hostloop.loop import EpisodeJob, HostLoop, final_rows
from lib.hostloop.prompt_agent import PromptAgent
from lib.models.tokenizer import load_tokenizer
from lib.run.results import ResultsLog

ROOT = pathlib.Path(__file__).resolve().parents[3]
KEY = "sk-accord-test-NEVER-LOG-ME-917"
GREEDY = SamplingParams(max_tokens=6, temperature=0.0)


def start_server(workdir: pathlib.Path, cache: pathlib.Path):
  out = open(workdir.parent / f"{workdir.name}.out", "w")
  # Both servers serve the same tiny model with every batch padded to 8 rows: one sampler program
  # per prompt bucket, and a shared compilation cache spares the second server the first's compiles.
  proc = subprocess.Popen(
      [sys.executable, "launch.py", "--config=configs/serve.py:debug=True",
       f"--workdir={workdir}", "--config.duration_s=0", "--config.min_batch=8",
       "--config.max_batch=8"], cwd=ROOT, stdout=out,
      stderr=subprocess.STDOUT,
      env={**os.environ, "JAX_PLATFORMS": "cpu", "JAX_COMPILATION_CACHE_DIR": str(cache)})
  info_path = workdir / "server.json"
  deadline = time.time() + 240
  while not info_path.exists():
    if proc.poll() is not None or time.time() > deadline:
      proc.kill()
      raise RuntimeError("server did not start:\n" + (workdir.parent /
                                                      f"{workdir.name}.out").read_text()[-3000:])
    time.sleep(0.2)
  return proc, json.loads(info_path.read_text())


@pytest.fixture(scope="module")
def server(tmp_path_factory):
  base = tmp_path_factory.mktemp("serve")
  proc, info = start_server(base / "run", base / "jax_cache")
  yield proc, info, base / "run"
  # SIGTERM in the middle of a long generation is a clean stop: exit 0, no traceback, and the
  # server writes its usage summary.
  long = OpenAIBackend(info["url"], "accord", timeout_s=120, max_retries=0)
  threading.Thread(target=long.generate, args=(convs(1), SamplingParams(max_tokens=1024)),
                   daemon=True).start()
  health = info["url"].replace("/v1", "/health")
  deadline = time.time() + 60
  while not json.load(urllib.request.urlopen(health, timeout=30))["busy_since"]:
    assert time.time() < deadline
    time.sleep(0.05)
  proc.terminate()
  assert proc.wait(timeout=120) == 0
  log = (base / "run.out").read_text()
  assert "Traceback" not in log and "Fatal Python error" not in log
  workdir = base / "run"
  assert json.loads((workdir / "summary.json").read_text())["summary"]["calls"] > 0


@pytest.fixture
def key_env(monkeypatch):
  monkeypatch.setenv("ACCORD_SERVE_TEST_KEY", KEY)
  return "ACCORD_SERVE_TEST_KEY"


def convs(k):
  return [[{"role": "system", "content": "Reply with one integer."},
           {"role": "user", "content": f"Range [0, {7 + i}]. Feedback: start."}] for i in range(k)]


def test_chat_and_embeddings_match_the_model_in_process(server, key_env):
  _, info, workdir = server
  client = OpenAIBackend(info["url"], "accord", api_key_env=key_env, timeout_s=180)
  out = client.generate(convs(3), GREEDY)
  assert all(c.ok for c in out), [c.error_detail for c in out]
  # Independent peers: the tokenizer the server saved counts the prompt tokens, and the same
  # checkpoint loaded in this process gives the same greedy text and embeddings.
  tok = load_tokenizer(workdir / "tiny_model")
  for conv, c in zip(convs(3), out):
    prompt = tok.apply_chat_template(conv, tokenize=False, add_generation_prompt=True)
    assert c.input_tokens == len(tok.encode(prompt, add_special_tokens=False))
    assert 1 <= c.output_tokens <= 6
  local = FlaxBackend.from_pretrained(workdir / "tiny_model", min_batch=8, max_batch=8)
  assert [c.text for c in local.generate(convs(3), GREEDY)] == [c.text for c in out]
  texts = ["a box left of the goal", "Range [0, 7]", "x"]
  remote = client.embed(texts)
  np.testing.assert_allclose(remote, local.embed(texts), atol=1e-5)
  np.testing.assert_allclose(np.linalg.norm(remote, axis=1), 1.0, atol=1e-5)
  assert client.usage.snapshot()["usage_coverage"] == 1.0


def test_models_route_errors_and_batching(server):
  _, info, _ = server
  with urllib.request.urlopen(info["url"] + "/models", timeout=30) as r:
    assert [m["id"] for m in json.load(r)["data"]] == ["accord"]
  (c,) = OpenAIBackend(info["url"], "no-such-model", timeout_s=60).generate(convs(1), GREEDY)
  assert c.error == "http_404" and c.attempts == 1 and "not found" in c.error_detail
  health = info["url"].replace("/v1", "/health")
  before = json.load(urllib.request.urlopen(health, timeout=30))
  client = OpenAIBackend(info["url"], "accord", max_concurrency=8, timeout_s=180)
  out = client.generate(convs(8), GREEDY)
  assert all(c.ok for c in out)
  after = json.load(urllib.request.urlopen(health, timeout=30))
  requests = after["requests"] - before["requests"]
  batches = after["batches"] - before["batches"]
  assert requests == 8 and batches < 8  # concurrent requests shared sampler batches


class KillBefore(Backend):
  """Forwards to `inner`, but SIGKILLs the server process before batch number `at`."""
  name = "openai_http"

  def __init__(self, inner, proc, at):
    super().__init__()
    self.inner, self.proc, self.at, self.n = inner, proc, at, 0

  def _generate(self, convs, params):
    self.n += 1
    if self.n == self.at:
      self.proc.kill()
      self.proc.wait(timeout=60)
    return self.inner.generate(convs, params)


def episode_specs():
  agent = lambda: PromptAgent("Reply with one integer.", render=lambda o: o, parse=parse_guess,
                              fallback_action=0, params=GREEDY)
  return [EpisodeJob(key={"instance": i, "rollout": 0}, env_seed=i,
                      make_env=lambda: GuessEnv(8), make_agent=agent) for i in range(6)]


def test_server_killed_mid_run(server, tmp_path, key_env, caplog):
  _, healthy, _ = server
  proc, info = start_server(tmp_path / "doomed", server[2].parent / "jax_cache")
  client = OpenAIBackend(info["url"], "accord", api_key_env=key_env, timeout_s=180,
                         max_retries=2, backoff_base_s=0.05)
  key = ("instance", "rollout", "attempt")
  loop = HostLoop(KillBefore(client, proc, at=3), action_budget=2, call_budget=2, max_live=2,
                  show_progress=False)
  with ResultsLog(str(tmp_path / "eval"), key=key) as log:
    out = loop.run(episode_specs(), log)
    rows = log.rows()
  assert out["run"] == 6 and len(rows) == 6  # no crash, every episode has its row
  done = [r for r in rows if r["status"] != "backend_error"]
  errs = [r for r in rows if r["status"] == "backend_error"]
  # Batches 1-2 served episodes 0 and 1 to their budgets; from batch 3 on the server is dead.
  successes = sum(r["success"] for r in done)
  assert sorted(r["instance"] for r in done) == [0, 1]
  assert all(r["calls"] == r["actions"] and r["failed_calls"] == 0 for r in done)
  assert all(r["calls"] == 2 or r["success"] for r in done), successes
  assert sorted(r["instance"] for r in errs) == [2, 3, 4, 5]
  for r in errs:
    assert r["error"] == "connection" and r["actions"] == 0 and r["failed_calls"] == 1
    (call,) = [e for e in r["transcript"] if e["type"] == "call"]
    assert call["attempts"] == 3 and call["messages"][1]["content"].startswith("Observation")
  assert client.usage.snapshot()["errors"] == {"connection": 4}
  # Rerun into the same results against a healthy server: only the failed episodes run again.
  finished_lines = [l for l in (tmp_path / "eval" / "results.jsonl").read_text().splitlines()]
  client2 = OpenAIBackend(healthy["url"], "accord", api_key_env=key_env, timeout_s=180)
  with ResultsLog(str(tmp_path / "eval"), key=key) as log:
    out = HostLoop(client2, action_budget=2, call_budget=2, max_live=2,
                   show_progress=False).run(episode_specs(), log)
    rows = log.rows()
  assert (out["skipped"], out["run"]) == (2, 4)
  text = (tmp_path / "eval" / "results.jsonl").read_text()
  assert text.splitlines()[:6] == finished_lines  # earlier rows untouched
  final = final_rows(rows, key)
  assert len(final) == 6 and not any(r["status"] == "backend_error" for r in final)
  assert sorted(r["attempt"] for r in final) == [0, 0, 1, 1, 1, 1]
  # The API key never reaches results, client logs or the server's log.
  assert KEY not in text and KEY not in caplog.text
  assert KEY not in (tmp_path / "doomed" / "log.txt").read_text()
