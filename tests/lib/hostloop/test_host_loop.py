"""Host loop: one batched backend call per step, budgets A and C, error rows, resumption."""
import json

import numpy as np
import pytest

from envs.toy.guess_env import BisectPolicy, GuessEnv, parse_guess
from lib.backends.protocol import Backend, Completion, SamplingParams, failed
from lib.backends.scripted import NoiseModel, ScriptedBackend
from lib.hostloop.agent import Act, ModelRequest
from lib.hostloop.loop import EpisodeJob, HostLoop, final_rows, request_seed
from lib.hostloop.prompt_agent import PromptAgent
from lib.run.results import ResultsLog

N = 32


class Recording(Backend):
  """Wraps a backend and records every batch it was asked for."""
  name = "recording"

  def __init__(self, inner, fail_if=None):
    super().__init__()
    self.inner, self.fail_if, self.batches = inner, fail_if, []

  def _generate(self, convs, params):
    self.batches.append(len(convs))
    out = self.inner.generate(convs, params)
    if self.fail_if:
      out = [failed("http_503", "injected") if self.fail_if(m) else c for m, c in zip(convs, out)]
    return out


def guess_agent():
  return PromptAgent("Guess the number.", render=lambda o: o, parse=parse_guess,
                     fallback_action=0)


def specs(n_episodes, env_n=N):
  return [EpisodeJob(key={"instance": i // 2, "rollout": i % 2}, env_seed=100 + i,
                      make_env=lambda: GuessEnv(env_n), make_agent=guess_agent,
                      extra={"env": "guess"}) for i in range(n_episodes)]


def bisect_guesses(seed, n=N):
  """Independent count of bisection guesses for GuessEnv(n).reset(seed)."""
  env = GuessEnv(n)
  env.reset(seed)
  lo, hi, k = 0, n - 1, 0
  while True:
    k += 1
    g = (lo + hi) // 2
    if g == env.target:
      return k
    lo, hi = (g + 1, hi) if g < env.target else (lo, g - 1)


def scripted(seed=0, rate=0.0):
  return ScriptedBackend(BisectPolicy(NoiseModel({"guess": rate})), seed=seed)


def test_one_backend_call_per_step(tmp_path):
  backend = Recording(scripted())
  loop = HostLoop(backend, action_budget=20, call_budget=20, show_progress=False)
  sp = specs(10)
  with ResultsLog(str(tmp_path), key=("instance", "rollout")) as log:
    out = loop.run(sp, log)
    rows = log.rows()
  need = [bisect_guesses(s.env_seed) for s in sp]
  assert all(r["status"] == "success" for r in rows)
  assert sorted(r["calls"] for r in rows) == sorted(need)
  # One batched call per step; batch s holds exactly the episodes still guessing at step s.
  assert out["steps"] == len(backend.batches) == max(need)
  assert backend.batches == [sum(k > s for k in need) for s in range(max(need))]
  assert sum(backend.batches) == sum(need) > len(backend.batches)
  row = rows[0]
  calls = [e for e in row["transcript"] if e["type"] == "call"]
  acts = [e for e in row["transcript"] if e["type"] == "action"]
  assert len(calls) == len(acts) == row["actions"]
  assert calls[0]["messages"][0]["role"] == "system" and calls[0]["text"].startswith("I guess")
  assert acts[-1]["reward"] == 1.0 and row["return"] == 1.0


def test_max_live_caps_batch(tmp_path):
  backend = Recording(scripted())
  loop = HostLoop(backend, action_budget=20, call_budget=20, max_live=3, show_progress=False)
  with ResultsLog(str(tmp_path), key=("instance", "rollout")) as log:
    loop.run(specs(7), log)
    assert len(log) == 7 and all(r["success"] for r in log.rows())
  assert max(backend.batches) == 3


class TwoCallsPerAction:
  """Asks the model twice (think, then act) before every action; always guesses 0."""

  def reset(self, obs, info):
    self.k = 0

  def next(self):
    self.k += 1
    if self.k % 3:
      return ModelRequest([{"role": "user", "content": "Range [0, 0]"}], tag=f"r{self.k}")
    return Act(N - 1 if self.k % 2 else 1)

  def consume(self, completion):
    assert completion.ok

  def observe(self, *args):
    pass


@pytest.mark.parametrize("a,c,status,actions,calls", [
    (3, 100, "action_budget", 3, 6),
    (100, 5, "call_budget", 2, 5),
    (2, 4, "action_budget", 2, 4),
])
def test_budgets(tmp_path, a, c, status, actions, calls):
  sp = [EpisodeJob(key={"i": 0}, env_seed=7, make_env=lambda: GuessEnv(1000),
                    make_agent=TwoCallsPerAction)]
  loop = HostLoop(scripted(), action_budget=a, call_budget=c, show_progress=False)
  with ResultsLog(str(tmp_path), key=("i",)) as log:
    loop.run(sp, log)
    (row,) = log.rows()
  assert (row["status"], row["actions"], row["calls"]) == (status, actions, calls)
  assert row["success"] is False


def test_backend_error_ends_only_that_episode_and_attempts_resume(tmp_path):
  sp = specs(6)
  # The second request of episode (1, 0) (env seed 102) carries this seed; fail exactly it.
  target_seed = request_seed(0, {"instance": 1, "rollout": 0}, 0, 1)
  inner = scripted()

  class FailOne(Backend):
    name = "fail_one"

    def _generate(self, convs, params):
      out = inner.generate(convs, params)
      return [failed("http_500", "injected after retries") if p.seed == target_seed else c
              for p, c in zip(params, out)]

  with ResultsLog(str(tmp_path), key=("instance", "rollout", "attempt")) as log:
    HostLoop(FailOne(), action_budget=20, call_budget=20, show_progress=False).run(sp, log)
    rows = log.rows()
  assert len(rows) == 6
  errs = [r for r in rows if r["status"] == "backend_error"]
  assert len(errs) == 1 and errs[0]["env_seed"] == 102 and errs[0]["error"] == "http_500"
  assert errs[0]["calls"] == 2 and errs[0]["failed_calls"] == 1
  assert all(r["success"] for r in rows if r is not errs[0])
  # Rerun with a healthy backend: only the errored episode runs again, as attempt 1.
  backend = Recording(scripted())
  with ResultsLog(str(tmp_path), key=("instance", "rollout", "attempt")) as log:
    out = HostLoop(backend, action_budget=20, call_budget=20, show_progress=False).run(sp, log)
    rows = log.rows()
  assert out["skipped"] == 5 and out["run"] == 1 and len(rows) == 7
  final = final_rows(rows, ("instance", "rollout", "attempt"))
  assert len(final) == 6 and all(r["success"] for r in final)
  assert [r["attempt"] for r in final if r["env_seed"] == 102] == [1]
  # A log keyed without "attempt" keeps the error row as final and reruns nothing.
  with ResultsLog(str(tmp_path / "b"), key=("instance", "rollout")) as log:
    log.append({**errs[0]})
    out = HostLoop(backend, action_budget=20, call_budget=20, show_progress=False).run(sp, log)
  assert out["skipped"] == 1 and out["run"] == 5


def test_agent_exception_is_recorded(tmp_path):
  class Broken(TwoCallsPerAction):
    def consume(self, completion):
      raise ValueError("parser bug")

  sp = [EpisodeJob(key={"i": 0}, env_seed=1, make_env=lambda: GuessEnv(8), make_agent=Broken),
        EpisodeJob(key={"i": 1}, env_seed=1, make_env=lambda: GuessEnv(8),
                    make_agent=guess_agent)]
  with ResultsLog(str(tmp_path), key=("i",)) as log:
    HostLoop(scripted(), action_budget=9, call_budget=9, show_progress=False).run(sp, log)
    a, b = sorted(log.rows(), key=lambda r: r["i"])
  assert a["status"] == "agent_error" and "parser bug" in a["error_detail"]
  assert b["status"] == "success"
  # Rows on disk are complete JSON lines.
  lines = (tmp_path / "results.jsonl").read_text().splitlines()
  assert [json.loads(x)["i"] for x in lines] == [0, 1]


def test_resume_skips_finished(tmp_path):
  sp = specs(8)
  with ResultsLog(str(tmp_path), key=("instance", "rollout")) as log:
    HostLoop(scripted(), action_budget=20, call_budget=20, show_progress=False).run(sp[:3], log)
  with ResultsLog(str(tmp_path), key=("instance", "rollout")) as log:
    out = HostLoop(scripted(), action_budget=20, call_budget=20,
                   show_progress=False).run(sp, log)
    assert (out["skipped"], out["run"], len(log)) == (3, 5, 8)


def test_rollouts_get_distinct_seeds_but_reruns_repeat(tmp_path):
  """Noisy scripted policy: per-episode request seeds make rollouts differ, and a rerun (even
  with a different live cap, i.e. different batch company) reproduces every transcript."""
  def run(d, max_live):
    with ResultsLog(str(tmp_path / d), key=("instance", "rollout")) as log:
      HostLoop(scripted(rate=0.7), action_budget=40, call_budget=40, max_live=max_live,
               show_progress=False).run(specs(8), log)
      return {(r["instance"], r["rollout"]): [e.get("text") for e in r["transcript"]]
              for r in log.rows()}
  a, b = run("a", None), run("b", 3)
  assert a == b
  assert len({json.dumps(v) for v in a.values()}) > 1
