"""Env executors of the host loop: the `processes` executor writes the rows `inline` writes; a
SIGKILLed or hung worker ends only its own episode, as env_error, and is replaced."""
import functools
import os
import signal
import time

import pytest

from envs.toy.guess_env import BisectPolicy, GuessEnv, parse_guess
from lib.backends.protocol import Backend
from lib.backends.scripted import NoiseModel, ScriptedBackend
from lib.hostloop.executors import ENV_TIMEOUT, ENV_WORKER_DIED, EnvCall, ProcessExecutor
from lib.hostloop.loop import EpisodeJob, HostLoop
from lib.hostloop.prompt_agent import PromptAgent
from lib.run.results import ResultsLog

pytestmark = pytest.mark.long_module(30)   # spawned workers; scheduled first: tests/conftest.py


def scripted(rate: float) -> ScriptedBackend:
  """Bisection with `rate` of its guesses garbled (varied episode lengths and statuses)."""
  return ScriptedBackend(BisectPolicy(NoiseModel({"guess": rate})), seed=0)


class Recording(Backend):
  """Wraps a backend (under its name) and records the size of every batch it was asked for."""

  def __init__(self, inner):
    super().__init__()
    self.inner, self.batches, self.name = inner, [], inner.name

  def _generate(self, convs, params):
    self.batches.append(len(convs))
    return self.inner.generate(convs, params)


class FaultyGuess(GuessEnv):
  """GuessEnv whose episode `seed` does `fault` at its `at`-th step: "raise" (an env bug),
  "hang" (sleeps for 10 minutes), "suicide" (SIGKILLs its own process); "pidfile" writes the
  process id to `path` at reset so the test can kill it from outside."""

  def __init__(self, fault: str = "", at: int = 2, path: str = ""):
    super().__init__(32)
    self.fault, self.at, self.path, self.steps = fault, at, path, 0

  def reset(self, seed):
    self.steps = 0
    if self.fault == "pidfile":
      with open(self.path + ".tmp", "w", encoding="utf-8") as f:
        f.write(str(os.getpid()))
      os.replace(self.path + ".tmp", self.path)
    return super().reset(seed)

  def step(self, action):
    self.steps += 1
    if self.steps == self.at:
      if self.fault == "raise":
        raise RuntimeError("the simulator lost its state")
      if self.fault == "hang":
        time.sleep(600)
      if self.fault == "suicide":
        os.kill(os.getpid(), signal.SIGKILL)
    return super().step(action)


def agent():
  return PromptAgent("Guess the number.", render=lambda o: o, parse=parse_guess,
                     fallback_action=0)


def jobs(n: int, faults: dict | None = None) -> list[EpisodeJob]:
  """n guess episodes; `faults` maps an episode index to FaultyGuess arguments."""
  faults = faults or {}
  return [EpisodeJob(key={"i": i}, env_seed=100 + i, make_agent=agent,
                     make_env=functools.partial(FaultyGuess, **faults.get(i, {})))
          for i in range(n)]


def play(path, specs, executor=None, backend=None, max_live=4, budget=6):
  backend = backend or scripted(rate=0.5)
  kw = {} if executor is None else {"executor": lambda: executor}
  loop = HostLoop(backend, action_budget=budget, call_budget=budget, max_live=max_live,
                  show_progress=False, **kw)
  with ResultsLog(str(path), key=("i",)) as log:
    out = loop.run(specs, log)
    rows = log.rows()
  return out, rows


def comparable(rows) -> list[dict]:
  """Rows without their timings (wall, model latency), in file order."""
  out = []
  for r in rows:
    r = {k: v for k, v in r.items() if k not in ("wall_s", "model_latency_s")}
    r["transcript"] = [{k: v for k, v in e.items() if k != "latency_s"} for e in r["transcript"]]
    out.append(r)
  return out


def test_processes_write_the_rows_inline_writes(tmp_path):
  specs = jobs(12, {3: dict(fault="raise", at=2)})
  inline_backend, proc_backend = Recording(scripted(rate=0.5)), Recording(scripted(rate=0.5))
  out_i, rows_i = play(tmp_path / "inline", specs, backend=inline_backend)
  ex = ProcessExecutor(step_timeout_s=30, workers=4)
  out_p, rows_p = play(tmp_path / "procs", specs, executor=ex, backend=proc_backend)
  assert comparable(rows_p) == comparable(rows_i)
  statuses = {r["status"] for r in rows_i}
  assert {"success", "agent_error"} <= statuses and len(statuses) >= 3, statuses
  bad = next(r for r in rows_p if r["i"] == 3)
  assert (bad["error"], bad["error_detail"]) == ("RuntimeError",
                                                 "RuntimeError: the simulator lost its state")
  # The loop's contract: one batched model call per step, the same batches either way.
  assert proc_backend.batches == inline_backend.batches and out_p["steps"] == out_i["steps"]
  assert ex.started == 4 and ex.replaced == 0   # one worker per live episode, reused


def _row(rows, i):
  return next(r for r in rows if r["i"] == i)


class KillAtCall(Recording):
  """Before its `at`-th batch, SIGKILLs the process whose id is in `pidfile` (a worker, from
  outside, between two steps of its episode)."""

  def __init__(self, inner, pidfile, at):
    super().__init__(inner)
    self.pidfile, self.at, self.killed = pidfile, at, None

  def _generate(self, convs, params):
    if len(self.batches) + 1 == self.at:
      with open(self.pidfile, encoding="utf-8") as f:
        self.killed = int(f.read())
      os.kill(self.killed, signal.SIGKILL)
    return super()._generate(convs, params)


def test_sigkilled_workers_end_only_their_episodes(tmp_path):
  pidfile = str(tmp_path / "victim.pid")
  faults = {1: dict(fault="pidfile", path=pidfile), 6: dict(fault="suicide", at=3)}
  _, clean = play(tmp_path / "inline", jobs(10))
  backend = KillAtCall(scripted(rate=0.5), pidfile, at=3)
  ex = ProcessExecutor(step_timeout_s=30, workers=4)
  out, rows = play(tmp_path / "procs", jobs(10, faults), executor=ex, backend=backend)
  assert sorted(r["i"] for r in rows) == list(range(10)) and out["run"] == 10   # none lost or twice
  killed, suicide = _row(rows, 1), _row(rows, 6)
  for r in (killed, suicide):
    assert (r["status"], r["error"]) == ("env_error", ENV_WORKER_DIED)
    assert "was killed by SIGKILL during env step; replaced" in r["error_detail"], r
  assert f"worker process {backend.killed} " in killed["error_detail"]
  assert 0 < killed["actions"] and suicide["actions"] == 2   # both died mid-episode
  # Every other episode finished exactly as in the inline run.
  others = sorted((r for r in comparable(rows) if r["i"] not in (1, 6)), key=lambda r: r["i"])
  assert others == sorted((r for r in comparable(clean) if r["i"] not in (1, 6)),
                          key=lambda r: r["i"])
  # 4 first workers, the 2 dead ones dropped; new ones serve the episodes still queued (once
  # fewer episodes remain than workers, the idle ones do).
  assert ex.replaced == 2 and 5 <= ex.started <= 6


def test_hung_env_times_out_and_its_worker_is_replaced(tmp_path):
  _, clean = play(tmp_path / "inline", jobs(8))
  ex = ProcessExecutor(step_timeout_s=2, workers=4)
  t0 = time.monotonic()
  out, rows = play(tmp_path / "procs", jobs(8, {2: dict(fault="hang", at=2)}), executor=ex)
  assert time.monotonic() - t0 < 60
  assert sorted(r["i"] for r in rows) == list(range(8)) and out["run"] == 8
  hung = _row(rows, 2)
  assert (hung["status"], hung["error"], hung["actions"]) == ("env_error", ENV_TIMEOUT, 1)
  assert "env step took longer than 2s; worker process" in hung["error_detail"]
  assert "killed and replaced" in hung["error_detail"]
  pid = int(hung["error_detail"].split("worker process ")[1].split()[0])
  with pytest.raises(ProcessLookupError):
    os.kill(pid, 0)   # the hung worker is gone
  assert (sorted((r for r in comparable(rows) if r["i"] != 2), key=lambda r: r["i"])
          == sorted((r for r in comparable(clean) if r["i"] != 2), key=lambda r: r["i"]))
  assert ex.replaced == 1 and ex.started == 5


def test_unpicklable_env_factory_is_one_clear_error(tmp_path):
  lock = __import__("threading").Lock()
  spec = EpisodeJob(key={"i": 0}, env_seed=0, make_agent=agent,
                    make_env=lambda: (lock, GuessEnv(8))[1])
  with pytest.raises(ValueError, match="cannot be pickled for a worker process"):
    play(tmp_path, [spec], executor=ProcessExecutor())


def test_closures_run_in_workers_and_workers_cap_live_episodes(tmp_path):
  n = 8
  specs = [EpisodeJob(key={"i": i}, env_seed=i, make_agent=agent,
                      make_env=lambda: GuessEnv(n)) for i in range(3)]
  _, inline = play(tmp_path / "a", specs)
  backend = Recording(scripted(rate=0.5))
  ex = ProcessExecutor(workers=2)
  _, procs = play(tmp_path / "b", specs, executor=ex, backend=backend, max_live=None)
  by_key = lambda rows: sorted(comparable(rows), key=lambda r: r["i"])
  assert by_key(procs) == by_key(inline)
  # The workers cap the live episodes, so every batch holds at most two requests.
  assert max(backend.batches) == 2 and ex.started == 2


def _cannot_rebuild():
  raise RuntimeError("this object cannot be rebuilt in a worker")


class BuiltHereOnly:
  """Pickles in the loop's process, fails to unpickle anywhere (an env module a worker lacks)."""

  def __reduce__(self):
    return _cannot_rebuild, ()


def test_env_that_cannot_be_rebuilt_in_a_worker_is_a_clear_row(tmp_path):
  specs = jobs(3)
  specs[1].make_env = functools.partial(FaultyGuess, fault=BuiltHereOnly())
  ex = ProcessExecutor(workers=2)
  _, rows = play(tmp_path, specs, executor=ex)
  bad = _row(rows, 1)
  assert (bad["status"], bad["error"]) == ("agent_error", "RuntimeError")
  assert bad["error_detail"] == "RuntimeError: this object cannot be rebuilt in a worker"
  assert {_row(rows, i)["status"] for i in (0, 2)} <= {"success", "action_budget", "call_budget"}
  assert ex.replaced == 0   # the worker lives on and serves the next episode


def test_a_worker_that_died_between_episodes_is_replaced_before_the_next(tmp_path):
  pidfile = str(tmp_path / "idle.pid")
  ex = ProcessExecutor(workers=1)
  first = EnvCall(0, "reset", make_env=functools.partial(FaultyGuess, fault="pidfile",
                                                          path=pidfile), seed=1)
  assert ex.run([first])[0].error is None
  ex.release(0)
  with open(pidfile, encoding="utf-8") as f:
    pid = int(f.read())
  os.kill(pid, signal.SIGKILL)   # the idle worker dies (an OOM killer, an operator)
  # Until it has fully exited: its main thread shows as a zombie while its other threads (JAX's)
  # still hold its files, so wait for the exit status (WNOWAIT leaves it to the executor to reap).
  for _ in range(200):
    try:
      if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
        break
    except ChildProcessError:   # already reaped: gone
      break
    time.sleep(0.05)
  again = ex.run([EnvCall(1, "reset", make_env=FaultyGuess, seed=2)])[0]
  ex.close()
  assert again.error is None and again.value[0].startswith("Range [0, 31]")
  assert ex.started == 2 and ex.replaced == 1


class SlowGuess(GuessEnv):
  """GuessEnv whose step takes 0.2 s and reports when it ran (info t0, t1: time.time())."""

  def __init__(self):
    super().__init__(32)

  def step(self, action):
    t0 = time.time()
    time.sleep(0.2)
    obs, reward, terminated, truncated, info = super().step(action)
    return obs, reward, terminated, truncated, {**info, "t0": t0, "t1": time.time()}


def _overlapping_steps(rows) -> int:
  """Pairs of steps of different episodes that ran at the same time."""
  spans = [(r["i"], e["info"]["t0"], e["info"]["t1"]) for r in rows for e in r["transcript"]
           if e["type"] == "action"]
  return sum(a[0] < b[0] and a[1] < b[2] and b[1] < a[2] for a in spans for b in spans)


def test_worker_envs_step_at_the_same_time_between_model_calls(tmp_path):
  specs = [EpisodeJob(key={"i": i}, env_seed=i, make_agent=agent, make_env=SlowGuess)
           for i in range(4)]
  _, inline = play(tmp_path / "a", specs)
  _, procs = play(tmp_path / "b", specs, executor=ProcessExecutor(workers=4))
  assert _overlapping_steps(inline) == 0
  # Every batch of steps ran side by side: at least as many overlaps as 4 episodes' first steps.
  assert _overlapping_steps(procs) >= 6
