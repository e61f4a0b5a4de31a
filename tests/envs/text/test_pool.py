"""PooledEnvFactory: a small picklable make_env whose envs stay in the process that leases them,
so the loop's process and each env worker process reuse their own envs across episodes."""
import collections
import functools
import itertools
import os

import cloudpickle
import pytest

from envs.text.pool import EnvLease, PooledEnvFactory, close_process_pools, process_pool
from lib.hostloop.executors import EnvCall, ProcessExecutor

_SERIALS = itertools.count()   # envs built by this process (each worker imports its own)


class OneStepEnv:
  """Ends every episode at its first step; reset reports the process and the env's serial
  number among the envs this process built."""

  def __init__(self, weight: int = 0):
    self.serial, self.closed = next(_SERIALS), False
    self.weight = bytes(weight)   # an env state far larger than its factory

  def reset(self, seed):
    return f"seed {seed}", {"pid": os.getpid(), "serial": self.serial}

  def step(self, action):
    return "done", 1.0, True, False, {}

  def close(self):
    self.closed = True


def test_one_process_shares_one_pool_per_key():
  make = PooledEnvFactory("test-pool/shared", functools.partial(OneStepEnv, weight=1 << 20))
  try:
    first = make()
    assert isinstance(first, EnvLease)
    first.reset(0)
    first.step("go")                   # episode over: the env goes back to the key's pool
    again = cloudpickle.loads(cloudpickle.dumps(make))()   # a copy names the same pool
    assert again.env is first.env
    busy = make()                      # `again` holds the only env: a second is built
    assert busy.env is not first.env and len(process_pool(make.key, None).built) == 2
    # The factory travels without its pool's envs (a megabyte each here).
    assert len(cloudpickle.dumps(make)) < 4096
    envs = process_pool(make.key, None).built
  finally:
    close_process_pools([make.key])
  assert all(env.closed for env in envs)
  fresh = make()                       # a closed pool is forgotten: the key starts over
  assert fresh.env not in envs
  close_process_pools([make.key, "test-pool/never-used"])


def test_each_worker_process_reuses_its_own_env_across_its_episodes():
  make = PooledEnvFactory("test-pool/workers", OneStepEnv)
  ex = ProcessExecutor(workers=2)
  seen = []
  try:
    for rnd in range(3):               # two live episodes a round, on the two workers
      episodes = (2 * rnd, 2 * rnd + 1)
      resets = ex.run([EnvCall(e, "reset", make_env=make, seed=e) for e in episodes])
      steps = ex.run([EnvCall(e, "step", action="go") for e in episodes])
      assert all(s.value[2] for s in steps)   # terminated: each env back in its worker's pool
      for e in episodes:
        ex.release(e)
      seen += [(r.value[1]["pid"], r.value[1]["serial"]) for r in resets]
  finally:
    ex.close()
  assert ex.started == 2 and len({pid for pid, _ in seen}) == 2
  assert os.getpid() not in {pid for pid, _ in seen}
  # One env per worker, built once and reused in all three of its episodes.
  assert sorted(collections.Counter(seen).values()) == [3, 3]


def test_a_key_names_one_kind_of_env():
  pool = process_pool("test-pool/first-factory", OneStepEnv)
  try:
    assert process_pool("test-pool/first-factory", lambda: pytest.fail("rebuilt")) is pool
  finally:
    close_process_pools(["test-pool/first-factory"])
