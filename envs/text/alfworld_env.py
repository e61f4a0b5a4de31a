"""ALFWorld (Shridhar et al., 2021) text games from a user-given ALFWORLD_DATA directory.

Games are found the way ALFWorld's `AlfredTWEnv.collect_game_files` finds them: every folder under
`<data>/json_2.1.1/<split>` with a `traj_data.json` and a `game.tw-pddl` whose `solvable` flag is
true, skipping the `movable`/`Sliced` variants and task types outside `task_types`. They are played
through TextWorld's PDDL engine with ALFWorld's own `AlfredDemangler`/`AlfredInfos` wrappers (so
objects read "apple 1", "cabinet 1"), i.e. the text the audit's agents saw, minus the THOR images.

Splits: "train", "valid_seen" (in-domain eval), "valid_unseen" (out-of-domain eval). The expert is
ALFWorld's planner expert (Fast Downward over the game's PDDL) via TextWorld's `policy_commands`.

ALFWorld 0.4 grammars phrase placing as "move X to Y"; the audit's prompts say "put X in/on Y".
`normalise_action` maps the latter onto the former when that is what the game admits.

Requires `alfworld>=0.4,<0.5` (pip; pulls textworld, fast-downward-textworld). Real game files
come from `alfworld-download` on a machine with network; tests build a game with
`envs.text.alfworld_game.write_tiny_game`.
"""
import json
import os
import re

from envs.text.textworld_env import TextWorldGames

SPLITS = ("train", "valid_seen", "valid_unseen")
TASK_TYPES = {1: "pick_and_place_simple", 2: "look_at_obj_in_light",
              3: "pick_clean_then_place_in_recep", 4: "pick_heat_then_place_in_recep",
              5: "pick_cool_then_place_in_recep", 6: "pick_two_obj_and_place"}
_TASK = re.compile(r"Your task is to:\s*(.+?)\s*$", re.DOTALL)
_PUT = re.compile(r"^put (.+?) (?:in/on|into|in|on) (.+)$")


def data_dir(path: str | None = None) -> str:
  """The ALFWorld data root: `path`, else the ALFWORLD_DATA environment variable."""
  root = path or os.environ.get("ALFWORLD_DATA")
  if not root:
    raise ValueError("give the ALFWorld data directory or set ALFWORLD_DATA "
                     "(the folder that holds json_2.1.1)")
  if not os.path.isdir(os.path.join(root, "json_2.1.1")):
    raise FileNotFoundError(f"{root!r} has no json_2.1.1 folder (run alfworld-download there)")
  return root


def list_games(root: str | None = None, split: str = "train",
               task_types: tuple[int, ...] = (1, 2, 3, 4, 5, 6)) -> list[str]:
  """Sorted solvable game files of one split."""
  if split not in SPLITS:
    raise ValueError(f"unknown split {split!r}; valid: {SPLITS}")
  wanted = {TASK_TYPES[t] for t in task_types}
  base = os.path.join(data_dir(root), "json_2.1.1", split)
  games = []
  for folder, _, files in os.walk(base):
    if "traj_data.json" not in files or "game.tw-pddl" not in files:
      continue
    if "movable" in folder or "Sliced" in folder:
      continue
    with open(os.path.join(folder, "traj_data.json")) as f:
      if json.load(f)["task_type"] not in wanted:
        continue
    game_file = os.path.join(folder, "game.tw-pddl")
    with open(game_file) as f:
      if not json.load(f).get("solvable"):
        continue
    games.append(game_file)
  return sorted(games)


def task_type_of(game_file: str) -> str:
  """The task family from a game path (`.../pick_and_place_simple-Apple-None-Cabinet-1/trial/`)."""
  return os.path.basename(os.path.dirname(os.path.dirname(game_file))).split("-")[0]


class ALFWorld(TextWorldGames):
  """ALFWorld games of one split; `reset(seed)` plays `games[seed % len(games)]`."""

  env_name = "alfworld"

  def __init__(self, root: str | None = None, split: str = "train",
               task_types: tuple[int, ...] = (1, 2, 3, 4, 5, 6), max_steps: int = 30,
               game_files: list[str] | None = None):
    # imported here: alfworld pulls in textworld, spacy, ... which the other envs do not need
    from alfworld.agents.environment.alfred_tw_env import AlfredDemangler, AlfredInfos
    games = game_files if game_files is not None else list_games(root, split, task_types)
    if not games:
      raise FileNotFoundError(f"no solvable ALFWorld games in split {split!r}")
    super().__init__(games, max_steps=max_steps, wrappers=[AlfredDemangler(), AlfredInfos])

  def task_name(self, game_file: str) -> str:
    return task_type_of(game_file)

  def split_intro(self, raw: str, infos: dict) -> tuple[str, str]:
    match = _TASK.search(raw)
    task = match.group(1).strip() if match else ""
    body = _TASK.sub("", raw) if match else raw
    parts = [p for p in body.split("\n\n") if p.strip() and not p.strip().startswith("-= Welcome")]
    return task, "\n\n".join(parts).strip()

  def clean(self, raw: str) -> str:
    return (raw or "").strip()

  def normalise_action(self, action: str, admissible: list[str]) -> str:
    action = " ".join(str(action).strip().split())
    match = _PUT.match(action)
    if match and action not in admissible:
      moved = f"move {match.group(1)} to {match.group(2)}"
      if moved in admissible:
        return moved
    return action

  def failed_action(self, action: str, obs: str, admissible_before: list[str]) -> bool:
    return action not in admissible_before or obs == "Nothing happens."


def make(root: str | None = None, split: str = "train", **kwargs) -> ALFWorld:
  """Registry factory."""
  return ALFWorld(root, split, **kwargs)
