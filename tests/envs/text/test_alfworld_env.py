"""ALFWorld adapter on a game built in ALFWorld's own format from the package's PDDL and grammar."""
import json
import os

import pytest

pytest.importorskip("alfworld")

from agents.wm.trajectory import ExpertPolicy, RandomPolicy, collect  # noqa: E402
from envs import registry  # noqa: E402
from envs.text.alfworld_env import ALFWorld, data_dir, list_games  # noqa: E402
from envs.text.alfworld_game import write_tiny_game  # noqa: E402


@pytest.fixture(scope="module")
def root(tmp_path_factory):
  r = str(tmp_path_factory.mktemp("alfworld_data"))
  write_tiny_game(r, split="train")
  write_tiny_game(r, split="valid_seen", obj="Egg", start="Fridge", goal="SinkBasin",
                  trial="T0002")
  # an unsolvable game is skipped, as ALFWorld's own loader skips it
  bad = write_tiny_game(r, split="train", obj="Mug", trial="T0003")
  with open(bad) as f:
    game = json.load(f)
  game["solvable"] = False
  with open(bad, "w") as f:
    json.dump(game, f)
  return r


def test_game_discovery(root, monkeypatch):
  train = list_games(root, "train")
  assert len(train) == 1 and "Apple" in train[0] and train[0].endswith("game.tw-pddl")
  assert len(list_games(root, "valid_seen")) == 1 and list_games(root, "valid_unseen") == []
  assert list_games(root, "train", task_types=(3,)) == []
  monkeypatch.setenv("ALFWORLD_DATA", root)
  assert data_dir() == root
  monkeypatch.delenv("ALFWORLD_DATA")
  with pytest.raises(ValueError):
    data_dir()
  with pytest.raises(FileNotFoundError):
    ALFWorld(root, "valid_unseen")


def test_play_through_the_adapter(root):
  env = registry.make("ALFWorld-v0", root=root, split="train")
  obs, info = env.reset(0)
  assert obs.startswith("You are in the middle of a room.") and "Welcome" not in obs
  assert "apple" in info["task"] and "cabinet" in info["task"]
  assert "go to countertop 1" in info["admissible_actions"]
  assert info["task_id"] == "alfworld/pick_and_place_simple/0"
  # the precondition fails: the apple is not in reach
  obs, _, terminated, _, info = env.step("take apple 1 from countertop 1")
  assert obs == "Nothing happens." and info["action_failed"] and not terminated
  env.step("go to countertop 1")
  env.step("take apple 1 from countertop 1")
  env.step("go to cabinet 1")
  obs, _, _, _, info = env.step("put apple 1 in/on cabinet 1")   # cabinet still closed
  assert obs == "Nothing happens." and info["action_failed"]
  _, _, _, _, info = env.step("open cabinet 1")
  assert not info["action_failed"]
  obs, reward, terminated, truncated, info = env.step("put apple 1 in/on cabinet 1")  # -> move
  assert terminated and not truncated and reward == 1.0 and info["success"]
  assert not info["action_failed"] and info["score"] == 100.0
  env.close()


def test_planner_expert_matches_walkthrough_and_wins(root):
  env = ALFWorld(root, "valid_seen")
  traj = collect(env, ExpertPolicy(), seed=0)
  with open(env.game_files[0]) as f:
    walkthrough = json.load(f)["walkthrough"]
  assert env.expert_actions() == walkthrough       # Fast Downward plan == hand-derived plan
  assert traj.success and [s.action for s in traj.steps] == walkthrough
  assert traj.observations[-1].startswith("You move the egg 1 to the sinkbasin 1")
  env.close()


def test_truncation_and_determinism(root):
  import numpy as np
  env = ALFWorld(root, "train", max_steps=4)
  a = collect(env, RandomPolicy(np.random.default_rng(1)), seed=0)
  b = collect(env, RandomPolicy(np.random.default_rng(1)), seed=0)
  assert len(a.steps) == 4 and not a.success
  assert a == b
  env.close()
  assert os.path.isdir(root)


def test_a_written_game_does_not_depend_on_the_global_random_state(tmp_path):
  """ALFWorld draws the goal wording from the global `random`: two writes of the same game under
  different global states must give the same file (and leave the caller's state as it was)."""
  import random  # pylint: disable=import-outside-toplevel
  files = []
  for outer_seed in range(4):
    random.seed(outer_seed)
    before = random.getstate()
    game = write_tiny_game(str(tmp_path / str(outer_seed)), obj="Egg", start="Fridge",
                           goal="SinkBasin")
    assert random.getstate() == before
    with open(game) as f:
      files.append(json.load(f)["grammar"])
  assert all(g == files[0] for g in files)
