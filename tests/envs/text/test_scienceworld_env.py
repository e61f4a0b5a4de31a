"""ScienceWorld adapter against the real simulator: catalog, gold replay, failures, JVM supervision.

One JVM serves the whole module (starting Java takes ~10 s); the kill and hang tests restart it.
"""
import gc
import os
import signal
import threading

import numpy as np
import pytest

pytest.importorskip("scienceworld")

from agents.wm.trajectory import ExpertPolicy, collect  # noqa: E402
from envs.text.base import ENV_DIED, ENV_HANG  # noqa: E402
from envs.text.scienceworld_env import (  # noqa: E402
    ScienceWorld, canonical_listing, failed_action, task_catalog)

TASK = "find-non-living-thing"  # 5-step gold path, fast to load


@pytest.fixture(scope="module")
def env():
  e = ScienceWorld([(TASK, 0), (TASK, 1)], gold=True, call_timeout_s=5.0)
  yield e
  e.close()


def test_catalog_covers_all_30_tasks_and_7207_variations(env):
  catalog = task_catalog()
  names = [row["task"] for row in catalog]
  assert len(catalog) == 30 and len(set(names)) == 30
  assert set(names) == set(env.task_names())
  # 7,207 task variations in total, as the ScienceWorld paper (Wang et al., 2022) reports
  assert sum(env.max_variations(n) for n in names) == 7207
  train, test = env.variations(TASK, "train"), env.variations(TASK, "test")
  assert train and test and not set(train) & set(test)


def test_gold_replay_succeeds(env):
  obs, info = env.reset(0)
  assert "find a(n) non-living thing" in info["task"] and "This room is called" in obs
  assert info["task_id"] == f"scienceworld/{TASK}/0" and "admissible_actions" not in info
  total = 0.0
  for action in env.gold_actions():
    obs, reward, terminated, truncated, info = env.step(action)
    total += reward
    assert not info["action_failed"]
  assert terminated and not truncated and info["success"] and info["score"] == 100.0
  assert total == pytest.approx(1.0)
  with pytest.raises(RuntimeError):
    env.step("look around")
  # the same level again is rewound, not reloaded, and plays out identically
  first = collect(env, ExpertPolicy(), seed=0)
  second = collect(env, ExpertPolicy(), seed=0)
  assert first == second and second.success


def test_failed_actions_and_truncation(env):
  env.reset(1)
  obs, _, _, _, info = env.step("dance wildly")
  assert obs == "No known action matches that input." and info["action_failed"]
  env.max_steps = 3
  try:
    _, _, terminated, truncated, info = env.step("wait1")     # step 2 of 3
    assert not (terminated or truncated) and not info["action_failed"]
    _, _, terminated, truncated, info = env.step("wait1")     # step 3: the limit
    assert truncated and not terminated and not info["success"]
  finally:
    env.max_steps = 30
  assert failed_action("The door is not open.") and failed_action("You can't pick up a gas directly.")
  assert failed_action("Ambiguous request: Please enter the number for the action you intended "
                       "(or blank to cancel):\n0: pick up apple\n1: pick up apple")
  assert not failed_action("You move to the kitchen.") and not failed_action(
      "This room is called the hallway. In it, you see:\n\tthe door is not open")


def test_list_regime_reports_valid_actions(env):
  env.list_actions = True
  try:
    _, info = env.reset(0)
  finally:
    env.list_actions = False
  assert "open door to kitchen" in info["admissible_actions"] and "look around" in info[
      "admissible_actions"]


class KillAt(ExpertPolicy):
  """The expert, except that it kills (or freezes) the JVM before its `at`-th action."""

  def __init__(self, at, sig):
    self.at, self.sig = at, sig

  def act(self, obs, info):
    if self.t == self.at:
      os.kill(self.env.jvm_pid, self.sig)
    return super().act(obs, info)

  def reset(self, env, obs, info):
    self.env = env
    super().reset(env, obs, info)


@pytest.mark.parametrize("sig,code", [(signal.SIGKILL, ENV_DIED), (signal.SIGSTOP, ENV_HANG)])
def test_dead_or_hung_jvm_is_recorded_and_the_run_continues(env, sig, code):
  env.reset(0)                                   # a live JVM, whichever tests ran before here
  restarts = env.restarts
  pid = env.jvm_pid
  broken = collect(env, KillAt(2, sig), seed=0)
  assert broken.env_error == code and not broken.success and len(broken.steps) == 2
  assert env.jvm_pid is None                     # the bad JVM is gone ...
  with pytest.raises(ProcessLookupError):
    os.kill(pid, 0)
  ok = collect(env, ExpertPolicy(), seed=0)      # ... and the next episode runs on a fresh one
  assert ok.success and ok.env_error is None and env.restarts == restarts + 1
  assert [s.action for s in ok.steps] == env.gold_actions()
  assert np.isclose(sum(s.reward for s in ok.steps), 1.0)


def test_killing_a_stopped_jvm_returns_when_garbage_collection_runs_inside(env):
  """A hung (stopped) JVM: `_kill` must return even when Python's cyclic garbage collector frees
  a py4j object while it runs (seen in CI: the collector ran inside the worker pool's shutdown,
  the object's finalizer asked the stopped JVM to free it and waited forever). The JVM is now
  killed first, so such a request fails at once. Here the collection is forced at that point."""
  env.reset(0)
  sw, pool = env._sw, env._pool
  gc.disable()
  try:
    cycle = [sw._gateway.jvm.java.util.ArrayList()]   # a JavaObject only a reference cycle holds
    cycle.append(cycle)
    del cycle
    os.kill(env.jvm_pid, signal.SIGSTOP)
    shutdown = pool.shutdown
    pool.shutdown = lambda *a, **k: (gc.collect(), shutdown(*a, **k))
    done = threading.Event()
    threading.Thread(target=lambda: (env._kill(), done.set()), daemon=True).start()
    assert done.wait(30), "_kill blocked on the stopped JVM"
  finally:
    gc.enable()
  assert env.jvm_pid is None
  obs, _ = env.reset(0)                          # and the env starts a fresh JVM
  assert "This room is called" in obs


def test_canonical_listing_sorts_each_run_of_listed_lines_only():
  room = ("This room is called the art studio. In it, you see: \n\tthe agent\n\ta wood cup "
          "(containing yellow paint)\n\ta wood cup (containing blue paint)\nYou also see:\n"
          "\tA door to the hallway (that is closed)\n\ta door to the kitchen")
  got = canonical_listing(room)
  assert got.split("\n") == [
      "This room is called the art studio. In it, you see: ", "\ta wood cup (containing blue "
      "paint)", "\ta wood cup (containing yellow paint)", "\tthe agent", "You also see:",
      "\tA door to the hallway (that is closed)", "\ta door to the kitchen"]
  assert canonical_listing(got) == got
  nested = "In it:\n\tb box\n\t\tz inside b\n\ta cup"   # sub-items stay under their parent
  assert canonical_listing(nested) == nested
  assert canonical_listing("You move to the kitchen.") == "You move to the kitchen."


def test_a_level_reads_the_same_whatever_the_jvm_played_before():
  """The simulator lists a room's objects in hash-set order, which depends on what the JVM loaded
  before: the art studio of find-non-living-thing variation 1 lists its paint cups in another
  order after the levels below than in a fresh JVM. The adapter's observation does not."""
  levels = [("find-non-living-thing", 0), ("find-plant", 0), ("boil", 0), ("melt", 0),
            ("find-non-living-thing", 1)]
  fresh = ScienceWorld(levels)
  try:
    first = fresh.reset(4)[0]
  finally:
    fresh.close()
  used = ScienceWorld(levels)
  try:
    for i in range(4):
      used.reset(i)
    after = used.reset(4)[0]
  finally:
    used.close()
  assert "wood cup" in first and after == first
