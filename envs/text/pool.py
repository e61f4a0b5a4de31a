"""Reuses expensive host-loop envs across episodes (a ScienceWorld env owns a JVM that takes
~10 s to start), for loops such as `lib.hostloop.loop.HostLoop` that ask for a fresh env per
episode: `pool.lease()` hands out an idle env (building one only when none is idle) behind a thin
lease that returns the env to the pool when its episode terminates or truncates. An episode
abandoned mid-way (a failed model call) keeps its env out of the pool, so no two episodes ever
share a simulator.

A pool object lives in one process. The host loop's worker executors (lib/hostloop/executors.py)
ship each episode's `make_env` to a worker process or Ray actor, so a pool passed as `make_env`
would be copied per episode there (a fresh JVM per episode). `PooledEnvFactory(key, factory)` is
the `make_env` that travels instead: small and picklable, it leases from the pool named `key` in
whatever process calls it, building that process's pool on first use. In the loop's own process
(`inline`) every episode shares one pool, as a plain `EnvPool` would; each worker process or actor
reuses its own envs across the episodes it serves.
"""
from typing import Any, Callable, Iterable

# This process's pools by key (PooledEnvFactory): module state, so each worker has its own.
_POOLS_BY_KEY: dict[str, "EnvPool"] = {}


class EnvPool:
  """Idle envs of one `factory`, handed out one per episode by `lease`."""

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


def process_pool(key: str, factory: Callable[[], Any]) -> EnvPool:
  """This process's pool named `key`, made with `factory` on first use (a later call's
  `factory` is not read: one key names one kind of env)."""
  if key not in _POOLS_BY_KEY:
    _POOLS_BY_KEY[key] = EnvPool(factory)
  return _POOLS_BY_KEY[key]


def close_process_pools(keys: Iterable[str]) -> None:
  """Closes and forgets this process's pools of `keys` (absent ones are skipped)."""
  for key in keys:
    pool = _POOLS_BY_KEY.pop(key, None)
    if pool is not None:
      pool.close()


class PooledEnvFactory:
  """A picklable `make_env` leasing from the calling process's pool `key` (see the module doc).

  Args:
    key: names the pool; unique per kind of env and per run (e.g. with a uuid), since the pool
      outlives the episodes and a second run under the same key would get the first run's envs.
    factory: builds one env (picklable: cloudpickle carries lambdas and closures).
  """

  def __init__(self, key: str, factory: Callable[[], Any]):
    self.key, self.factory = key, factory

  def __call__(self) -> EnvLease:
    return process_pool(self.key, self.factory).lease()
