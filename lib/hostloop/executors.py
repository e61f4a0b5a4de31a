"""Where the host loop's environments run (`host.executor` in a config's `host` block).

The loop (lib/hostloop/loop.py) keeps every agent and asks its executor to run env calls: between
two batched model calls it hands over the pending `reset` / `step` of every live episode at once,
and gets one `EnvResult` per call, in order. Executors:

  inline      the envs live in the loop's process and the calls run one after another (the
              default; the rows are those of the loop before executors existed)
  processes   one env per spawned worker process (multiprocessing's spawn context), all calls
              of a batch at once; a crash kills a worker, not the run (a killed worker's
              process group goes with it: the JVM or game process its env started)
  ray         one env per Ray actor (lib/hostloop/ray_executor.py)
lib/hostloop/executor_factory.py builds the one a config's `host` block names.

In the worker executors a call that outlives its timeout (`reset_timeout_s` for a reset, which
includes building the env; `step_timeout_s` for a step) or whose worker dies ends that episode as
`env_error` (code `env_timeout` / `env_worker_died`, the cause in `error_detail`); the worker is
killed and a new one serves the next episode, and the other episodes go on. An exception the env
raises is not a worker failure: it comes back as `raised` and the loop records it as it always
has (`agent_error`, the exception in `error_detail`), so every executor writes the same rows.
Env factories travel to workers with cloudpickle, so lambdas and closures work; one whose env
should outlive its episode (a JVM) leases from the worker's own pool
(`envs.text.pool.PooledEnvFactory`).
"""
import dataclasses
import multiprocessing
import os
import pickle
import signal
import time
import traceback
from multiprocessing.connection import wait
from typing import Any, Callable, Protocol, Sequence

import cloudpickle


ENV_TIMEOUT, ENV_WORKER_DIED = "env_timeout", "env_worker_died"
KINDS = ("inline", "processes", "ray")


@dataclasses.dataclass
class EnvCall:
  """One env call of one episode: op "reset" (build the env with `make_env`, then
  `reset(seed)`) or "step" (`step(action)`); `episode` is the loop's id of the episode."""
  episode: int
  op: str
  make_env: Callable[[], Any] | None = None
  seed: int = 0
  action: Any = None


@dataclasses.dataclass
class EnvResult:
  """What one call gave: `value` (reset: (obs, info); step: (obs, reward, terminated, truncated,
  info)), or `raised` = (exception type name, its one-line text) when the env raised, or `error`
  (ENV_TIMEOUT / ENV_WORKER_DIED) with `detail` when the worker failed."""
  value: Any = None
  raised: tuple[str, str] | None = None
  error: str | None = None
  detail: str = ""


class EnvExecutor(Protocol):
  """Runs env calls for the host loop; `capacity` is how many episodes it can hold at once (None:
  any number; the loop caps its live episodes by it); `close` ends every worker."""
  capacity: int | None

  def run(self, calls: Sequence[EnvCall]) -> list[EnvResult]: ...
  def release(self, episode: int) -> None: ...
  def close(self) -> None: ...


def exception_record(exc: BaseException) -> tuple[str, str]:
  """(type name, `traceback.format_exception_only` text) of an exception, as rows record it."""
  return type(exc).__name__, "".join(traceback.format_exception_only(type(exc), exc)).strip()


def call_env(envs: dict, call: EnvCall) -> EnvResult:
  """Runs one call against `envs` (episode id -> env), in this process."""
  try:
    if call.op == "reset":
      envs[call.episode] = call.make_env()
      return EnvResult(value=envs[call.episode].reset(call.seed))
    return EnvResult(value=envs[call.episode].step(call.action))
  except Exception as e:  # pylint: disable=broad-except  (the env's own failure, reported per row)
    return EnvResult(raised=exception_record(e))


class InlineExecutor:
  """The envs in the loop's process, one call after another."""
  capacity = None

  def __init__(self):
    self.envs: dict[int, Any] = {}

  def run(self, calls: Sequence[EnvCall]) -> list[EnvResult]:
    return [call_env(self.envs, c) for c in calls]

  def release(self, episode: int) -> None:
    self.envs.pop(episode, None)

  def close(self) -> None:
    self.envs.clear()


def worker_main(conn) -> None:
  """A worker process: one env at a time, one reply per reset/step message, until "exit".

  It leads its own process group, which the processes its env starts (ScienceWorld's JVM, an
  isolated TextWorld game) join, so the loop ends them with the worker (`_Worker.kill`)."""
  signal.signal(signal.SIGINT, signal.SIG_IGN)   # Ctrl-C is the loop's: it closes the workers
  os.setpgid(0, 0)
  envs: dict[int, Any] = {}
  while True:
    try:
      blob = conn.recv_bytes()
    except EOFError:   # the loop's process is gone
      return
    try:   # fails when the env's module does not import here
      op, payload = pickle.loads(blob)
    except Exception as e:  # pylint: disable=broad-except
      conn.send_bytes(cloudpickle.dumps(EnvResult(raised=exception_record(e))))
      continue
    if op == "exit":
      return
    if op == "release":
      env = envs.pop(payload, None)
      if env is not None and hasattr(env, "close"):
        try:
          env.close()
        except Exception:  # pylint: disable=broad-except  (a failed close frees nothing more)
          pass
      continue
    result = call_env(envs, payload)
    try:
      blob = cloudpickle.dumps(result)
    except Exception as e:  # pylint: disable=broad-except  (an env value pickle cannot carry)
      blob = cloudpickle.dumps(EnvResult(raised=exception_record(e)))
    conn.send_bytes(blob)


def death_detail(what: str, pid: int, exitcode: int | None, op: str) -> str:
  """One line naming the worker, how it ended and during which call."""
  if exitcode is not None and exitcode < 0:
    how = f"was killed by {signal.Signals(-exitcode).name}"
  else:
    how = f"exited with code {exitcode}"
  return f"{what} {pid} {how} during env {op}; replaced"


class _Worker:

  def __init__(self, ctx):
    self.conn, child = ctx.Pipe()
    self.proc = ctx.Process(target=worker_main, args=(child,), daemon=True)
    self.proc.start()
    child.close()

  def end(self, timeout: float = 5.0) -> int | None:
    """Asks the worker to exit, kills it after `timeout`; returns its exit code."""
    try:
      self.conn.send_bytes(pickle.dumps(("exit", None)))
    except OSError:
      pass
    self.proc.join(timeout)
    return self.kill()

  def kill(self) -> int | None:
    """Kills the worker and what its env started; returns the worker's exit code.

    A child that outlives a killed worker would leak: a JVM exits when its parent's end of its
    stdin closes, but not one that is stopped (SIGSTOP) or too wedged to read it. The worker's
    process group holds them (`worker_main`), and its id stays the worker's pid while any member
    lives, so it names no other process."""
    if self.proc.is_alive():
      self.proc.kill()
    self.proc.join()
    self.conn.close()
    try:
      os.killpg(self.proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):   # no member left
      pass
    return self.proc.exitcode


class ProcessExecutor:
  """One env per spawned worker process; every call of a batch runs at once.

  Args:
    step_timeout_s: longest a step may take before its episode ends as `env_timeout`.
    reset_timeout_s: the same for a reset (which builds the env, in a fresh worker after
      importing its modules: JAX envs import JAX and compile their step in every worker).
    workers: most worker processes at once, so most live episodes (0: one per CPU core).
  """

  def __init__(self, step_timeout_s: float = 60.0, reset_timeout_s: float = 300.0,
               workers: int = 0):
    self.step_timeout_s, self.reset_timeout_s = step_timeout_s, reset_timeout_s
    self.capacity = workers or os.cpu_count() or 1
    self._ctx = multiprocessing.get_context("spawn")
    self._idle: list[_Worker] = []
    self._busy: dict[int, _Worker] = {}
    self.started = 0    # workers spawned (the first ones and every replacement)
    self.replaced = 0   # workers killed after a timeout or found dead

  def run(self, calls: Sequence[EnvCall]) -> list[EnvResult]:
    results: list[EnvResult | None] = [None] * len(calls)
    pending, deadline = {}, {}
    for i, call in enumerate(calls):
      try:
        blob = cloudpickle.dumps((call.op, call))
      except Exception as e:  # pylint: disable=broad-except  (cloudpickle raises many types)
        raise ValueError(f"host.executor='processes': env call {call.op} of episode "
                         f"{call.episode} cannot be pickled for a worker process "
                         f"({exception_record(e)[1]})") from None
      worker = self._worker(call)
      try:
        worker.conn.send_bytes(blob)
      except OSError:
        results[i] = self._died(call, worker)
        continue
      pending[worker.conn] = i
      deadline[i] = time.monotonic() + self._limit(call)
    while pending:
      ready = wait(list(pending), timeout=max(0.0, min(deadline[i] for i in pending.values())
                                              - time.monotonic()))
      for conn in ready:
        i = pending.pop(conn)
        try:
          results[i] = pickle.loads(conn.recv_bytes())
        except (EOFError, OSError):
          results[i] = self._died(calls[i], self._busy[calls[i].episode])
      now = time.monotonic()
      for conn, i in list(pending.items()):
        if now >= deadline[i]:
          del pending[conn]
          results[i] = self._timed_out(calls[i])
    return results

  def _limit(self, call: EnvCall) -> float:
    return self.reset_timeout_s if call.op == "reset" else self.step_timeout_s

  def _timed_out(self, call: EnvCall) -> EnvResult:
    worker = self._busy.pop(call.episode)
    worker.kill()
    self.replaced += 1
    return EnvResult(error=ENV_TIMEOUT, detail=(
        f"env {call.op} took longer than {self._limit(call):g}s; worker process "
        f"{worker.proc.pid} killed and replaced"))

  def _worker(self, call: EnvCall) -> _Worker:
    if call.op != "reset":
      return self._busy[call.episode]
    # An idle worker never writes, so a readable pipe means its end closed: it died between
    # episodes (checked on the pipe too, as its exit code may have been reaped elsewhere).
    while self._idle and (self._idle[-1].conn.poll() or not self._idle[-1].proc.is_alive()):
      self._idle.pop().kill()
      self.replaced += 1
    if not self._idle:
      self._idle.append(_Worker(self._ctx))
      self.started += 1
    self._busy[call.episode] = self._idle.pop()
    return self._busy[call.episode]

  def _died(self, call: EnvCall, worker: _Worker) -> EnvResult:
    self._busy.pop(call.episode, None)
    pid, code = worker.proc.pid, worker.kill()
    self.replaced += 1
    return EnvResult(error=ENV_WORKER_DIED,
                     detail=death_detail("worker process", pid, code, call.op))

  def release(self, episode: int) -> None:
    worker = self._busy.pop(episode, None)
    if worker is None:
      return
    try:
      worker.conn.send_bytes(pickle.dumps(("release", episode)))
      self._idle.append(worker)
    except OSError:
      worker.kill()

  def close(self) -> None:
    for worker in [*self._idle, *self._busy.values()]:
      worker.end()
    self._idle, self._busy = [], {}
