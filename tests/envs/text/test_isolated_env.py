"""A TextWorld game played in a child process: same transitions as in-process play, and a worker
killed or frozen mid-episode ends only that episode with its env_error code."""
import functools
import os
import signal

import pytest

pytest.importorskip("textworld")

from agents.wm.trajectory import ExpertPolicy, collect  # noqa: E402
from envs.text.base import ENV_DIED, ENV_HANG  # noqa: E402
from envs.text.isolated import IsolatedEnv  # noqa: E402
from envs.text.textworld_env import TextWorldGames, make_games  # noqa: E402


@pytest.fixture(scope="module")
def games(tmp_path_factory):
  return make_games(str(tmp_path_factory.mktemp("tw_iso")), seeds=[1, 2])


def test_isolated_play_matches_in_process(games):
  local = TextWorldGames(games, max_steps=6)
  iso = IsolatedEnv(functools.partial(TextWorldGames, games, max_steps=6))
  try:
    assert iso.max_steps == 6 and iso.pid != os.getpid()
    for seed in (0, 1):
      a, b = collect(local, ExpertPolicy(), seed), collect(iso, ExpertPolicy(), seed)
      assert a == b and a.success                 # identical steps, admissible lists included
      assert iso.spec == local.spec
    assert iso.reset(1) == local.reset(1)
    assert iso.step("dance") == local.step("dance")   # a refused action, reported the same way
  finally:
    local.close()
    iso.close()
  assert iso.pid is None


def test_worker_killed_or_frozen_mid_episode_then_recovers(games):
  iso = IsolatedEnv(functools.partial(TextWorldGames, games, max_steps=6), call_timeout_s=3.0)
  try:
    for sig, code in ((signal.SIGKILL, ENV_DIED), (signal.SIGSTOP, ENV_HANG)):
      obs, info = iso.reset(0)
      plan = iso.expert_actions()
      iso.step(plan[0])
      os.kill(iso.pid, sig)
      obs, reward, terminated, truncated, info = iso.step(plan[1])
      assert (obs, reward, terminated, truncated) == ("", 0.0, True, False)
      assert info["env_error"] == code and not info["success"] and info["steps"] == 2
      assert iso.pid is None                      # the worker is gone (a frozen one is killed)
      traj = collect(iso, ExpertPolicy(), seed=0)  # a fresh worker on the next reset
      assert traj.success and traj.env_error is None
    # a worker that died between episodes is found dead by reset and replaced
    dead = iso.pid
    os.kill(dead, signal.SIGKILL)
    obs, info = iso.reset(1)
    assert iso.pid != dead and info["admissible_actions"] and not info["success"]
  finally:
    iso.close()


def test_env_exceptions_reach_the_caller(games, tmp_path):
  iso = IsolatedEnv(functools.partial(TextWorldGames, games))
  try:
    with pytest.raises(RuntimeError, match="reset"):
      iso.step("look")                            # the env's own error, not an env_error
    assert not hasattr(iso, "gold_actions") and callable(iso.expert_actions)
  finally:
    iso.close()
  with pytest.raises(RuntimeError, match="FileNotFoundError"):
    IsolatedEnv(functools.partial(TextWorldGames, [str(tmp_path / "missing.z8")]))
