"""Domain labels of eval levels: ScienceWorld topics, ALFWorld task types, TextWorld settings."""
import pytest

from agents.wm import domains
from envs.text import scienceworld_env


def test_every_scienceworld_task_has_a_topic():
  pytest.importorskip("scienceworld")
  labels = {t: domains.domain("scienceworld", (t, 0)) for t in scienceworld_env.TASK_NAMES}
  assert len(labels) == 30 and set(labels) == set(domains.scienceworld_topics())
  assert labels["boil"] == labels["melt"] == "Matter"
  assert labels["find-plant"] == "Classification" and labels["test-conductivity"] == "Electricity"
  assert set(labels.values()) == {"Matter", "Measurement", "Electricity", "Classification",
                                  "Biology", "Chemistry", "Forces"}
  with pytest.raises(KeyError):
    domains.domain("scienceworld", ("no-such-task", 0))


def test_alfworld_task_type_from_a_game_in_alfworlds_layout(tmp_path):
  pytest.importorskip("alfworld")
  from envs.text import alfworld_env  # pylint: disable=import-outside-toplevel
  from envs.text.alfworld_game import write_tiny_game  # pylint: disable=import-outside-toplevel
  write_tiny_game(str(tmp_path), split="train")
  games = alfworld_env.list_games(str(tmp_path), "train")
  assert games and {domains.domain("alfworld", g) for g in games} == {"pick_and_place_simple"}


def test_textworld_settings_from_the_generated_file_name():
  assert domains.domain("textworld", "/g/tw_w3_o4_q2_s101.z8") == \
      "custom (3 rooms, 4 objects, quest 2)"
  assert domains.domain("textworld", "/g/other.z8") == "textworld game"
  with pytest.raises(ValueError):
    domains.domain("minigrid", "x")
