"""TextWorld games generated offline (TextWorld's generator + bundled Inform 7), played end to end."""
import numpy as np
import pytest

pytest.importorskip("textworld")

from agents.wm.trajectory import ExpertPolicy, RandomPolicy, collect  # noqa: E402
from envs.text.textworld_env import TextWorldGames, clean_textworld, make_games  # noqa: E402


@pytest.fixture(scope="module")
def env(tmp_path_factory):
  games = make_games(str(tmp_path_factory.mktemp("tw")), seeds=[1])
  e = TextWorldGames(games, max_steps=6)
  yield e
  e.close()


def test_walkthrough_wins(env):
  obs, info = env.reset(0)
  assert obs.startswith("-=") and info["task"] and ">" not in obs.splitlines()[-1]
  assert env.expert_actions()[0] in info["admissible_actions"]
  traj = collect(env, ExpertPolicy(), seed=0)
  assert traj.success and traj.score == 100.0 and traj.env == "textworld"
  assert all(s.executed for s in traj.steps)


def test_refused_actions_and_truncation(env):
  env.reset(0)
  obs, _, _, _, info = env.step("dance")
  assert obs == "That's not a verb I recognise." and info["action_failed"]
  rand = collect(env, RandomPolicy(np.random.default_rng(0), fallback_actions=("look",)), seed=0)
  again = collect(env, RandomPolicy(np.random.default_rng(0), fallback_actions=("look",)), seed=0)
  assert rand == again                            # same seed, same trajectory
  assert rand.success or len(rand.steps) == 6


def test_clean_textworld():
  raw = "\nYou pick it up.\n\n>                                 -= Bedroom =-0/1"
  assert clean_textworld(raw) == "You pick it up."
  with pytest.raises(FileNotFoundError):
    TextWorldGames(["/nonexistent/game.z8"])


def test_env_pool_reuses_finished_envs(env):
  from envs.text.pool import EnvPool
  built = []
  pool = EnvPool(lambda: built.append(1) or env)
  a, b = pool.lease(), pool.lease()          # two live episodes need two envs
  assert len(built) == 2
  a.reset(0)
  for action in a.env.expert_actions():
    *_, terminated, truncated, _ = a.step(action)
  assert terminated and len(pool.idle) == 1
  c = pool.lease()                          # reuses a's env, builds nothing
  assert len(built) == 2 and c.env is a.env and b.env is env
  with pytest.raises(RuntimeError):
    a.reset(0)
