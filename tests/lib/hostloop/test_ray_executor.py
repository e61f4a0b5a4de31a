"""The `ray` env executor on a local Ray started by the test: the rows of the inline loop, and a
dead or hung actor ends only its own episode, as env_error."""
import functools
import time

import pytest

ray = pytest.importorskip("ray")

from lib.hostloop.executors import ENV_TIMEOUT, ENV_WORKER_DIED  # noqa: E402
from lib.hostloop.ray_executor import RayExecutor, start_ray  # noqa: E402

from test_env_executor import (BuiltHereOnly, FaultyGuess, Recording, comparable, jobs,  # noqa: E402
                               play, scripted)

# ray.init starts Ray's own daemons with subprocess (fork, then exec at once), which JAX's fork
# warning cannot tell from a bare fork of a multithreaded process.
pytestmark = [pytest.mark.long_module(50),   # scheduled first: tests/conftest.py
              pytest.mark.filterwarnings(r"ignore:os\.fork\(\) was called:RuntimeWarning")]


@pytest.fixture(scope="module", autouse=True)
def local_ray():
  start_ray("")   # what host.ray_address="" does
  yield
  ray.shutdown()


def by_key(rows):
  return sorted(comparable(rows), key=lambda r: r["i"])


def test_ray_actors_write_the_rows_inline_writes(tmp_path):
  specs = jobs(10, {3: dict(fault="raise", at=2)})
  inline_backend, ray_backend = Recording(scripted(rate=0.5)), Recording(scripted(rate=0.5))
  _, rows_i = play(tmp_path / "inline", specs, backend=inline_backend)
  ex = RayExecutor(step_timeout_s=60, workers=4, num_cpus=0.25)
  _, rows_r = play(tmp_path / "ray", specs, executor=ex, backend=ray_backend)
  assert comparable(rows_r) == comparable(rows_i)
  assert ray_backend.batches == inline_backend.batches
  assert {r["status"] for r in rows_i} >= {"success", "agent_error"}
  assert ex.started == 4 and ex.replaced == 0


def test_dead_and_hung_actors_end_only_their_episodes(tmp_path):
  _, clean = play(tmp_path / "inline", jobs(8))
  ex = RayExecutor(step_timeout_s=3, workers=4, num_cpus=0.25)
  t0 = time.monotonic()
  out, rows = play(tmp_path / "ray", jobs(8, {1: dict(fault="suicide", at=2),
                                              5: dict(fault="hang", at=2)}), executor=ex)
  assert time.monotonic() - t0 < 90
  assert sorted(r["i"] for r in rows) == list(range(8)) and out["run"] == 8
  dead, hung = (next(r for r in rows if r["i"] == i) for i in (1, 5))
  assert (dead["status"], dead["error"], dead["actions"]) == ("env_error", ENV_WORKER_DIED, 1)
  assert "Ray actor died during env step" in dead["error_detail"]
  assert (hung["status"], hung["error"], hung["actions"]) == ("env_error", ENV_TIMEOUT, 1)
  assert "env step took longer than 3s; Ray actor killed and replaced" in hung["error_detail"]
  assert ([r for r in by_key(rows) if r["i"] not in (1, 5)]
          == [r for r in by_key(clean) if r["i"] not in (1, 5)])
  assert ex.replaced == 2


def test_env_that_cannot_be_rebuilt_in_an_actor_is_a_clear_row(tmp_path):
  specs = jobs(2)
  specs[1].make_env = functools.partial(FaultyGuess, fault=BuiltHereOnly())
  ex = RayExecutor(workers=2)
  _, rows = play(tmp_path, specs, executor=ex)
  bad = next(r for r in rows if r["i"] == 1)
  assert (bad["status"], bad["error"]) == ("agent_error", "RuntimeError"), bad["error_detail"]
  assert "this object cannot be rebuilt in a worker" in bad["error_detail"]
