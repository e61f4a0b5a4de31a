"""Runs a host-loop text env in its own Python process, so a simulator that corrupts memory or
aborts takes down only that process, never the run.

Why: TextWorld plays `.z8` games through jericho's C Z-machine inside the calling process, and
jericho has been seen to abort the whole interpreter (`free(): invalid next size`) when games are
closed; a long evaluation would lose everything not yet written. `IsolatedEnv(factory)` starts a
fresh interpreter (`python -m envs.text.isolated`, no fork of a multithreaded JAX parent, no
re-import of the launcher) that builds `factory()` and serves `reset`/`step` and the expert hooks
(`expert_actions`, `gold_actions`) over a pipe.

Failures follow `envs.text.base`: the worker exiting mid-call ends the episode with
`env_error = env_died`, a call slower than `call_timeout_s` kills the worker and records
`env_hang`, an exception inside the env's own `step` is still the env's business (it returns its
own error info). The next `reset` starts a fresh worker. Exceptions the env raises on purpose
(`RuntimeError: call reset() before step()`, bad arguments) are re-raised in the parent.

    env = IsolatedEnv(functools.partial(TextWorldGames, game_files, max_steps=30))
    obs, info = env.reset(0)          # same interface as the wrapped env
"""
import os
import pickle
import subprocess
import sys
from multiprocessing.connection import Connection
from typing import Any, Callable

from envs.text.base import ENV_DIED, ENV_HANG, error_info

_EXPERT_HOOKS = ("expert_actions", "gold_actions")
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class IsolatedEnv:
  """A host-loop text env (`factory()`, picklable) living in a child process.

  Args:
    factory: builds the env in the child (e.g. `functools.partial(TextWorldGames, files)`).
    call_timeout_s: a reset/step slower than this counts as a hung simulator.
    start_timeout_s: importing the simulator and building the env in a fresh interpreter.
  """

  def __init__(self, factory: Callable[[], Any], call_timeout_s: float = 120.0,
               start_timeout_s: float = 300.0):
    self.factory = factory
    self.call_timeout_s, self.start_timeout_s = call_timeout_s, start_timeout_s
    self._proc: subprocess.Popen | None = None
    self.spec, self._info = None, {}
    self._hooks, self.max_steps = self._start()

  # ---- the worker process ---------------------------------------------------------------

  @property
  def pid(self) -> int | None:
    """The worker's pid (tests kill it to simulate a crashed simulator)."""
    return self._proc.pid if self._proc is not None else None

  def _start(self):
    to_child_r, to_child_w = os.pipe()
    to_parent_r, to_parent_w = os.pipe()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (_ROOT, os.environ.get("PYTHONPATH", "")) if p)}
    self._proc = subprocess.Popen(
        [sys.executable, "-m", "envs.text.isolated", str(to_child_r), str(to_parent_w)],
        pass_fds=(to_child_r, to_parent_w), env=env, cwd=_ROOT)
    os.close(to_child_r)
    os.close(to_parent_w)
    self._send, self._recv = Connection(to_child_w, readable=False), Connection(to_parent_r,
                                                                                writable=False)
    self._send.send_bytes(pickle.dumps(self.factory))
    status, payload = self._reply(self.start_timeout_s)
    if status != "ok":
      self._kill()
      raise RuntimeError(f"isolated env failed to start: {payload}")
    return payload

  def _reply(self, timeout: float):
    """(status, payload) from the worker; raises _WorkerLost on death or timeout."""
    try:
      if not self._recv.poll(timeout):
        self._kill()
        raise _WorkerLost(ENV_HANG, f"no reply within {timeout}s")
      return pickle.loads(self._recv.recv_bytes())
    except (EOFError, OSError) as e:
      rc = self._kill()
      raise _WorkerLost(ENV_DIED, f"env process exited (code {rc}): {type(e).__name__}") from e

  def _call(self, name: str, *args, timeout: float | None = None):
    if self._proc is None:
      raise _WorkerLost(ENV_DIED, "env process is not running")
    try:
      self._send.send_bytes(pickle.dumps((name, args)))
    except OSError as e:
      rc = self._kill()
      raise _WorkerLost(ENV_DIED, f"env process exited (code {rc})") from e
    status, payload = self._reply(timeout or self.call_timeout_s)
    if status == "raise":
      raise payload
    return payload

  def _kill(self) -> int | None:
    proc, self._proc = self._proc, None
    for conn in (getattr(self, "_send", None), getattr(self, "_recv", None)):
      if conn is not None:
        conn.close()
    self._send = self._recv = None
    if proc is None:
      return None
    if proc.poll() is None:
      proc.kill()
    return proc.wait()

  # ---- host-loop interface --------------------------------------------------------------

  def reset(self, seed: int, retries: int = 1) -> tuple[str, dict]:
    """Starts a fresh worker when the last episode lost its own; a worker lost during the
    reset itself is replaced `retries` times, then the failure is raised (a setup error)."""
    for attempt in range(retries + 1):
      if self._proc is None:
        self._hooks, self.max_steps = self._start()
      try:
        obs, info, self.spec = self._call("reset", seed, timeout=self.start_timeout_s)
        break
      except _WorkerLost as e:
        if attempt == retries:
          raise RuntimeError(f"isolated env lost its worker on reset: {e}") from e
    self._info = info
    return obs, info

  def step(self, action: str) -> tuple[str, float, bool, bool, dict]:
    try:
      out = self._call("step", action)
    except _WorkerLost as e:
      base = {k: self._info.get(k) for k in ("task", "task_id")}
      base.update(score=0.0, steps=int(self._info.get("steps", 0)) + 1)
      return "", 0.0, True, False, error_info(base, e.code, e.detail)
    self._info = out[4]
    return out

  def __getattr__(self, name):
    # Only reached for attributes the proxy lacks: the expert hooks the wrapped env has.
    if name in _EXPERT_HOOKS and name in self.__dict__.get("_hooks", ()):
      return lambda: self._call(name)
    raise AttributeError(name)

  def close(self) -> None:
    if self._proc is None:
      return
    try:
      self._send.send_bytes(pickle.dumps(("close", ())))
      self._proc.wait(timeout=30)
    except (OSError, subprocess.TimeoutExpired):
      pass            # the worker's own close may abort (jericho): its exit code is irrelevant
    self._kill()


class _WorkerLost(Exception):

  def __init__(self, code: str, detail: str):
    super().__init__(f"{code}: {detail}")
    self.code, self.detail = code, detail


def _serve(recv: Connection, send: Connection) -> None:
  """Worker loop: build the env, then answer (method, args) requests until `close`/EOF."""
  try:
    env = pickle.loads(recv.recv_bytes())()
  except Exception as e:  # pylint: disable=broad-except
    send.send_bytes(pickle.dumps(("error", f"{type(e).__name__}: {e}")))
    return
  hooks = tuple(h for h in _EXPERT_HOOKS if callable(getattr(env, h, None)))
  send.send_bytes(pickle.dumps(("ok", (hooks, int(env.max_steps)))))
  while True:
    try:
      name, args = pickle.loads(recv.recv_bytes())
    except EOFError:
      return
    if name == "close":
      env.close()
      return
    try:
      if name == "reset":
        obs, info = env.reset(*args)
        payload = (obs, info, env.spec)
      elif name == "step" or name in hooks:
        payload = getattr(env, name)(*args)
      else:
        raise AttributeError(f"isolated env has no method {name!r}")
      reply = ("ok", payload)
    except Exception as e:  # pylint: disable=broad-except
      try:
        pickle.dumps(e)
        reply = ("raise", e)
      except Exception:  # pylint: disable=broad-except
        reply = ("raise", RuntimeError(f"{type(e).__name__}: {e}"))
    send.send_bytes(pickle.dumps(reply))


if __name__ == "__main__":
  _serve(Connection(int(sys.argv[1]), writable=False), Connection(int(sys.argv[2]),
                                                                   readable=False))
