"""TextWorld games (and ALFWorld, which is TextWorld over PDDL) behind the host-loop interface.

`TextWorldGames(game_files)` plays compiled TextWorld games (`tw-make ... --output g.z8`, made
offline) or ALFWorld `game.tw-pddl` files (see `envs.text.alfworld_env`); `reset(seed)` plays
`game_files[seed % len(game_files)]`. Every step the env reports the game's admissible commands
(`info["admissible_actions"]`); an action outside the previous step's admissible list counts as
a failed action (TextWorld answers it with a refusal such as "You can't see any such thing."
and ALFWorld with "Nothing happens."), which is exactly the audit's "no executed action".

The expert for trajectory collection is the game's own plan: TextWorld's `policy_commands`
(the walkthrough from the current state) at reset.

Requires `textworld>=1.6,<1.8` (pulled in by `alfworld`); no network, no Java.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from typing import Sequence

from envs.text.base import ENV_EXCEPTION, EpisodeSpec, error_info

# The Z-machine prompt (">" plus the padded status line) that follows every TextWorld reply.
_PROMPT = re.compile(r"\n>[^\n]*\s*$", re.DOTALL)


def clean_textworld(text: str) -> str:
  """Drops the trailing ">" prompt/status line and surrounding blank lines of a TextWorld reply."""
  return _PROMPT.sub("", text or "").strip()


class TextWorldGames:
  """Plays a list of TextWorld game files, one episode at a time.

  Args:
    game_files: `.z8`/`.ulx` games from `tw-make`, or ALFWorld `game.tw-pddl` files.
    max_steps: actions per episode before `truncated=True` (the audit uses 30).
    env_name: name used in `EpisodeSpec`/task ids.
    wrappers: extra `textworld.core.Wrapper`s (ALFWorld's demangler) in textworld.gym order.
  """

  env_name = "textworld"

  def __init__(self, game_files: Sequence[str], max_steps: int = 30, wrappers: Sequence = ()):
    if not game_files:
      raise ValueError("TextWorldGames needs at least one game file")
    missing = [g for g in game_files if not os.path.exists(g)]
    if missing:
      raise FileNotFoundError(f"game files not found: {missing}")
    if max_steps < 1:
      raise ValueError(f"max_steps must be >= 1, got {max_steps}")
    self.game_files, self.max_steps, self.wrappers = list(game_files), max_steps, list(wrappers)
    self._envs: dict[str, object] = {}
    self._env = None
    self.spec: EpisodeSpec | None = None

  # ---- per-env hooks (ALFWorld overrides these) -------------------------------------------

  def task_name(self, game_file: str) -> str:
    return os.path.splitext(os.path.basename(game_file))[0]

  def split_intro(self, raw: str, infos: dict) -> tuple[str, str]:
    """(task, first observation) from the game's opening text."""
    task = (infos.get("objective") or "").strip()
    text = clean_textworld(raw)
    if task and task in text:  # the banner and objective precede the first room description
      text = text.split(task, 1)[1].strip()
    return task, text

  def clean(self, raw: str) -> str:
    return clean_textworld(raw)

  def normalise_action(self, action: str, admissible: list[str]) -> str:
    return " ".join(str(action).strip().split())

  def failed_action(self, action: str, obs: str, admissible_before: list[str]) -> bool:
    del obs
    return action not in admissible_before

  # ---- episodes ---------------------------------------------------------------------------

  def _make(self, game_file: str):
    # textworld (via alfworld, the optional `envs` extra) is heavy: imported when a game is played
    import textworld  # pylint: disable=import-outside-toplevel
    import textworld.gym  # pylint: disable=import-outside-toplevel
    if game_file not in self._envs:
      req = textworld.EnvInfos(won=True, lost=True, admissible_commands=True, objective=True,
                               score=True, max_score=True, policy_commands=True)
      env_id = textworld.gym.register_game(game_file, req, max_episode_steps=10**6,
                                           wrappers=list(self.wrappers))
      self._envs[game_file] = textworld.gym.make(env_id)
    return self._envs[game_file]

  def reset(self, seed: int) -> tuple[str, dict]:
    index = int(seed) % len(self.game_files)
    game_file = self.game_files[index]
    self.spec = EpisodeSpec(self.env_name, self.task_name(game_file), index, game_file)
    self._env = self._make(game_file)
    raw, infos = self._env.reset()
    self.task, obs = self.split_intro(raw, infos)
    self._steps, self._done = 0, False
    self._expert = list(infos.get("policy_commands") or [])
    self._admissible = sorted(infos.get("admissible_commands") or [])
    self._max_score = infos.get("max_score") or 1
    return obs, self._info(infos, won=False, action_failed=False)

  def expert_actions(self) -> list[str]:
    """The game's plan from the start state (TextWorld walkthrough / ALFWorld PDDL planner)."""
    return list(self._expert)

  def _info(self, infos: dict, won: bool, action_failed: bool) -> dict:
    score = 100.0 * float(infos.get("score") or 0) / float(self._max_score)
    return {"task": self.task, "score": 100.0 if won else score, "success": bool(won),
            "action_failed": action_failed, "env_error": None, "steps": self._steps,
            "admissible_actions": list(self._admissible), "task_id": self.spec.task_id}

  def step(self, action: str) -> tuple[str, float, bool, bool, dict]:
    if self._env is None:
      raise RuntimeError("call reset() before step()")
    if self._done:
      raise RuntimeError("episode is over; call reset()")
    self._steps += 1
    before = self._admissible
    action = self.normalise_action(action, before)
    try:
      raw, _, done, infos = self._env.step(action)
    except Exception as e:  # pylint: disable=broad-except
      # A crashed interpreter ends this episode only; the game is rebuilt on the next reset.
      self._envs.pop(self.spec.path, None)
      self._env, self._done = None, True
      base = {"task": self.task, "score": 0.0, "steps": self._steps, "task_id": self.spec.task_id}
      return "", 0.0, True, False, error_info(base, ENV_EXCEPTION, f"{type(e).__name__}: {e}")
    obs = self.clean(raw)
    won, lost = bool(infos.get("won")), bool(infos.get("lost"))
    self._admissible = sorted(infos.get("admissible_commands") or [])
    info = self._info(infos, won=won, action_failed=self.failed_action(action, obs, before))
    terminated = won or lost or bool(done)  # max_episode_steps is huge: done means the game ended
    truncated = not terminated and self._steps >= self.max_steps
    self._done = terminated or truncated
    return obs, float(won), terminated, truncated, info

  def close(self) -> None:
    for env in self._envs.values():
      try:
        env.close()
      except Exception:  # pylint: disable=broad-except
        pass
    self._envs.clear()
    self._env = None


def game_path(output_dir: str, seed: int, world_size: int, nb_objects: int,
              quest_length: int) -> str:
  """The cache path of one generated game: its settings and seed name it (reused when present)."""
  return os.path.join(output_dir, f"tw_w{world_size}_o{nb_objects}_q{quest_length}_s{seed}.z8")


def _make_one(path: str, seed: int, world_size: int, nb_objects: int, quest_length: int) -> str:
  # textworld (via alfworld, the optional `envs` extra) is heavy: imported when games are made
  import textworld  # pylint: disable=import-outside-toplevel
  import textworld.generator  # pylint: disable=import-outside-toplevel
  # Built in a private folder and moved in (.json, then .z8 last): a concurrent or killed
  # generator never leaves a half-written game under the cache name.
  tmp = tempfile.mkdtemp(dir=os.path.dirname(path), prefix=".tmp_")
  try:
    options = textworld.GameOptions()
    options.seeds = int(seed)
    options.nb_rooms, options.nb_objects = world_size, nb_objects
    options.quest_length = quest_length
    options.path = os.path.join(tmp, os.path.basename(path))
    options.force_recompile = True
    game = textworld.generator.make_game(options)
    textworld.generator.compile_game(game, options)
    stem = os.path.splitext(options.path)[0]
    os.replace(stem + ".json", os.path.splitext(path)[0] + ".json")
    os.replace(options.path, path)
  finally:
    shutil.rmtree(tmp, ignore_errors=True)
  return path


# A child interpreter that imports this module only (multiprocessing's spawn would re-import the
# caller's __main__, e.g. launch.py with JAX, in every worker).
_WORKER = ("import json, sys\nfrom envs.text.textworld_env import _make_one\n"
           "for job in json.loads(sys.argv[1]):\n  _make_one(*job)\n")


def _generate_in_children(todo: list, processes: int) -> None:
  root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
  env = {**os.environ, "PYTHONPATH": os.pathsep.join(
      [root] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])}
  chunks = [todo[i::processes] for i in range(min(processes, len(todo)))]
  children = [subprocess.Popen([sys.executable, "-c", _WORKER, json.dumps(chunk)], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
              for chunk in chunks]
  failed = []
  for child in children:
    _, err = child.communicate()
    if child.returncode:
      failed.append(err.decode(errors="replace").strip().splitlines()[-1:] or ["?"])
  if failed:
    raise RuntimeError(f"TextWorld game generation failed in {len(failed)} worker(s): "
                       f"{failed[0][0]}")


def make_games(output_dir: str, seeds: Sequence[int], world_size: int = 3, nb_objects: int = 4,
               quest_length: int = 2, processes: int = 1) -> list[str]:
  """Generates TextWorld games offline with `tw-make custom` settings (one per seed).

  Uses TextWorld's Python generator (the same code `tw-make` runs) and compiles to `.z8` with
  the Inform 7 tools bundled in the wheel. Games are cached on disk under a name keyed by their
  settings and seed (`game_path`); an existing game is reused. Missing games are generated by
  `processes` worker processes (about 1.5 s of CPU per small game).

  Args:
    output_dir: cache folder.
    seeds: one game per seed.
    world_size, nb_objects, quest_length: the difficulty knobs (rooms, objects in the world,
      actions in the winning walkthrough).
    processes: generator processes (1 = in this process).
  Returns:
    the game paths, in the order of `seeds`.
  """
  for name, v in (("world_size", world_size), ("nb_objects", nb_objects),
                  ("quest_length", quest_length), ("processes", processes)):
    if int(v) < 1:
      raise ValueError(f"make_games: {name} must be >= 1, got {v}")
  os.makedirs(output_dir, exist_ok=True)
  paths = [game_path(output_dir, int(s), world_size, nb_objects, quest_length) for s in seeds]
  todo = [(p, int(s), world_size, nb_objects, quest_length)
          for p, s in dict(zip(paths, seeds)).items() if not os.path.exists(p)]
  if processes > 1 and len(todo) > 1:
    _generate_in_children(todo, processes)
  else:
    for job in todo:
      _make_one(*job)
  return paths


def make(game_files: Sequence[str], **kwargs) -> TextWorldGames:
  """Registry factory."""
  return TextWorldGames(game_files, **kwargs)
