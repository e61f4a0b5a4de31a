"""The `ray` env executor: one env per Ray actor (`host.executor = "ray"`,
lib/hostloop/executors.py).

Each live episode's env lives in a Ray actor that reserves `num_cpus` (fractional: 0.25 packs four
envs per core); the calls of one batch go out together and are waited for with the same
per-call timeouts as the `processes` executor. An actor that outlives its timeout is killed
(`ray.kill`) and its episode ends as `env_timeout`; one that dies (`RayActorError`) ends its
episode as `env_worker_died`; either way the next episode gets a new actor. Env factories and
values travel with Ray's serialiser (cloudpickle), so lambdas work.

`address` "" starts a local Ray inside the run (its workers see this process's `sys.path`, so the
repository's modules import); "auto" or "ray://head:10001" joins a running cluster, whose
workers must have the repository installed (`pip install -e .` or a `working_dir` runtime env).
Requires the `ray` extra (`pip install -e '.[ray]'`).
"""
import os
import sys
import time
import warnings
from typing import Any, Sequence

import ray

from lib.hostloop.executors import (ENV_TIMEOUT, ENV_WORKER_DIED, EnvCall, EnvResult, call_env,
                                  exception_record)


class EnvActor:
  """The actor: one env at a time (`call_env`), released between episodes."""

  def __init__(self):
    self.envs: dict[int, Any] = {}

  def pid(self) -> int:
    return os.getpid()

  def call(self, call: EnvCall) -> EnvResult:
    return call_env(self.envs, call)

  def release(self, episode: int) -> None:
    env = self.envs.pop(episode, None)
    if env is not None and hasattr(env, "close"):
      env.close()


def task_failure(error: "ray.exceptions.RayTaskError") -> tuple[str, str]:
  """(type name, one line) of the exception under a failed Ray call: a call whose arguments did
  not unpickle in the actor arrives as a RaySystemError around the unpickling error."""
  cause = error.cause or error
  if isinstance(cause, ray.exceptions.RaySystemError):
    cause = cause.client_exc
  if isinstance(cause, BaseException):
    name, text = exception_record(cause)
  else:
    name, text = "RaySystemError", str(cause)
  return name, text.strip().splitlines()[0] if text.strip() else name


def start_ray(address: str) -> None:
  """Joins the Ray cluster at `address`, or starts a local one for "" (no dashboard, quiet);
  nothing when this process is connected already."""
  if ray.is_initialized():
    return
  with warnings.catch_warnings():
    # Ray starts its daemons with subprocess (fork + exec at once): JAX's warning about forking
    # a multithreaded process is about forks that go on running Python, not these.
    warnings.filterwarnings("ignore", message=r"os\.fork\(\) was called", category=RuntimeWarning)
    if address:
      ray.init(address=address, logging_level="ERROR", log_to_driver=False)
      return
    path = os.pathsep.join(p for p in sys.path if p)
    ray.init(include_dashboard=False, logging_level="ERROR", log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": path}})


class RayExecutor:
  """One env per Ray actor; every call of a batch runs at once.

  Args:
    step_timeout_s: longest a step may take before its episode ends as `env_timeout`.
    reset_timeout_s: the same for a reset (which starts the actor's env).
    workers: most actors at once, so most live episodes (0: one per CPU of the cluster).
    address: "" starts a local Ray; "auto" / "ray://host:port" joins a cluster.
    num_cpus: CPUs each actor reserves (fractional).
  """

  def __init__(self, step_timeout_s: float = 60.0, reset_timeout_s: float = 300.0,
               workers: int = 0, address: str = "", num_cpus: float = 0.25):
    start_ray(address)
    self.step_timeout_s, self.reset_timeout_s = step_timeout_s, reset_timeout_s
    self.capacity = workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
    self._actor_cls = ray.remote(num_cpus=num_cpus, max_restarts=0)(EnvActor)
    self._idle: list[Any] = []
    self._busy: dict[int, Any] = {}
    self.started = 0
    self.replaced = 0

  def _limit(self, call: EnvCall) -> float:
    return self.reset_timeout_s if call.op == "reset" else self.step_timeout_s

  def _actor(self, call: EnvCall):
    if call.op != "reset":
      return self._busy[call.episode]
    if not self._idle:   # a dead idle actor shows up as env_worker_died at its next reset
      self._idle.append(self._actor_cls.remote())
      self.started += 1
    self._busy[call.episode] = self._idle.pop()
    return self._busy[call.episode]

  def run(self, calls: Sequence[EnvCall]) -> list[EnvResult]:
    results: list[EnvResult | None] = [None] * len(calls)
    pending, deadline = {}, {}
    for i, call in enumerate(calls):
      pending[self._actor(call).call.remote(call)] = i
      deadline[i] = time.monotonic() + self._limit(call)
    while pending:
      wait_s = max(0.0, min(deadline[i] for i in pending.values()) - time.monotonic())
      ready, _ = ray.wait(list(pending), num_returns=1, timeout=wait_s)
      for ref in ready:
        i = pending.pop(ref)
        try:
          results[i] = ray.get(ref)
        except ray.exceptions.RayActorError as e:
          results[i] = self._replace(calls[i], ENV_WORKER_DIED, (
              f"Ray actor died during env {calls[i].op} ({exception_record(e)[0]}); replaced"))
        except ray.exceptions.RayTaskError as e:   # the call could not run (an unimportable env)
          results[i] = EnvResult(raised=task_failure(e))
      now = time.monotonic()
      for ref, i in list(pending.items()):
        if now >= deadline[i]:
          del pending[ref]
          results[i] = self._replace(calls[i], ENV_TIMEOUT, (
              f"env {calls[i].op} took longer than {self._limit(calls[i]):g}s; Ray actor "
              f"killed and replaced"))
    return results

  def _replace(self, call: EnvCall, code: str, detail: str) -> EnvResult:
    ray.kill(self._busy.pop(call.episode), no_restart=True)
    self.replaced += 1
    return EnvResult(error=code, detail=detail)

  def release(self, episode: int) -> None:
    actor = self._busy.pop(episode, None)
    if actor is not None:
      actor.release.remote(episode)
      self._idle.append(actor)

  def close(self) -> None:
    for actor in [*self._idle, *self._busy.values()]:
      ray.kill(actor, no_restart=True)
    self._idle, self._busy = [], {}
