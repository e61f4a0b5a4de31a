"""Reuses expensive host-loop envs across episodes (a ScienceWorld env owns a JVM that takes
~10 s to start), for loops such as `lib.llm.host_loop.HostLoop` that ask for a fresh env per
episode: `pool.lease()` hands out an idle env (building one only when none is idle) behind a thin
lease that returns the env to the pool when its episode terminates or truncates. An episode
abandoned mid-way (a failed model call) keeps its env out of the pool, so no two episodes ever
share a simulator.
"""
from typing import Any, Callable


class EnvPool:

  def __init__(self, factory: Callable[[], Any]):
    self.factory = factory
    self.idle: list[Any] = []
    self.built: list[Any] = []

  def lease(self) -> "EnvLease":
    if not self.idle:
      self.built.append(self.factory())
      self.idle.append(self.built[-1])
    return EnvLease(self, self.idle.pop())

  def close(self) -> None:
    for env in self.built:
      env.close()
    self.idle, self.built = [], []


class EnvLease:
  """Forwards `reset`/`step` (and `spec`, `max_steps`) to one pooled env for one episode."""

  def __init__(self, pool: EnvPool, env: Any):
    self._pool, self.env, self._returned = pool, env, False

  @property
  def spec(self):
    return self.env.spec

  @property
  def max_steps(self) -> int:
    return self.env.max_steps

  def reset(self, seed: int):
    if self._returned:
      raise RuntimeError("this lease's episode is over; lease a new env")
    return self.env.reset(seed)

  def step(self, action):
    out = self.env.step(action)
    if (out[2] or out[3]) and not self._returned:
      self._returned = True
      self._pool.idle.append(self.env)
    return out
