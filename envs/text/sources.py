"""The text games of a run, from its config: ScienceWorld, TextWorld and ALFWorld level sets with
an env factory per split (train / eval), as the world-model audit's data and evaluation read them.

  sources = text_env_sources(config, workdir, max_steps=30)
  make_env, levels = sources["textworld"]      # levels["train"], levels["eval"]
  env = make_env("eval")                        # built lazily; reset(i) plays levels["eval"][i]

Config blocks read (each has `enabled`):
  scienceworld  tasks, train_variations / eval_variations (index lists, or a simulator split name
                "train" / "dev" / "test", then the first `per_task` of it)
  textworld     train_seeds, eval_seeds, games_dir ("" = <workdir>/textworld_games), isolate,
                the difficulty knobs world_size / nb_objects / quest_length (eval games, and
                training games unless train_settings lists (rooms, objects, quest) triples:
                then every train seed is generated at every listed setting), processes
  alfworld      data_dir ("" = a tiny game of ALFWorld's format per split, written into
                <workdir>/alfworld_tiny_data), eval_split, isolate
"""
import functools
import os
from typing import Any, Callable

from envs.text import alfworld_env
from envs.text.alfworld_game import write_tiny_game
from envs.text.isolated import IsolatedEnv
from envs.text.scienceworld_env import ScienceWorld
from envs.text.textworld_env import TextWorldGames, make_games


def text_env_sources(config, workdir: str, max_steps: int,
                     gold: bool = True) -> dict[str, tuple[Callable[[str], Any], dict]]:
  """The enabled text games of `config` (see the module docstring).

  Args:
    config: a config with `scienceworld`, `textworld` and `alfworld` blocks.
    workdir: where generated games are written when the config names no directory.
    max_steps: actions per episode before `truncated`.
    gold: make ScienceWorld generate gold paths (needed by experts only; loads are slower).
  Returns:
    env name -> (make_env(split) building a fresh env over that split's levels,
    {"train": levels, "eval": levels}); level descriptors are (task, variation) pairs for
    ScienceWorld and game file paths for TextWorld and ALFWorld.
  """
  out = {}
  if config.scienceworld.enabled:
    sw = config.scienceworld
    levels = {"train": scienceworld_levels(sw.tasks, sw.train_variations, sw.per_task),
              "eval": scienceworld_levels(sw.tasks, sw.eval_variations, sw.per_task)}
    out["scienceworld"] = (lambda split, lv=levels: ScienceWorld(
        lv[split], max_steps=max_steps, gold=gold), levels)
  if config.textworld.enabled:
    tw = config.textworld
    games_dir = tw.games_dir or os.path.join(workdir, "textworld_games")
    games = {"train": [g for setting in textworld_train_settings(tw)
                       for g in make_games(games_dir, tw.train_seeds, *setting,
                                           processes=tw.processes)],
             "eval": make_games(games_dir, tw.eval_seeds, *textworld_setting(tw),
                                processes=tw.processes)}
    out["textworld"] = (lambda split, g=games: _maybe_isolated(
        functools.partial(TextWorldGames, g[split], max_steps=max_steps), tw), games)
  if config.alfworld.enabled:
    root = config.alfworld.data_dir
    if not root:  # no real data: a tiny game of ALFWorld's format per split, marked as such
      root = os.path.join(workdir, "alfworld_tiny_data")
      write_tiny_game(root, split="train")
      write_tiny_game(root, split="valid_seen", obj="Egg", start="Fridge", goal="SinkBasin")
    games = {"train": alfworld_env.list_games(root, "train"),
             "eval": alfworld_env.list_games(root, config.alfworld.eval_split)}
    out["alfworld"] = (lambda split, g=games: _maybe_isolated(functools.partial(
        alfworld_env.ALFWorld, root, max_steps=max_steps, game_files=g[split]),
        config.alfworld), games)
  return out


def textworld_setting(tw) -> tuple[int, int, int]:
  """(rooms, objects, quest length) of the TextWorld eval games of a `textworld` block."""
  return int(tw.world_size), int(tw.nb_objects), int(tw.quest_length)


def textworld_train_settings(tw) -> list[tuple[int, int, int]]:
  """The settings the training games are generated at: `train_settings`, else the eval one."""
  out = [tuple(int(v) for v in s) for s in tw.train_settings] or [textworld_setting(tw)]
  bad = [s for s in out if len(s) != 3]
  if bad:
    raise ValueError(f"textworld.train_settings: (rooms, objects, quest) triples, got {bad}")
  return out


def _maybe_isolated(factory, env_config):
  """TextWorld/ALFWorld games run jericho's Z-machine in-process, and jericho can abort the
  interpreter; `isolate` (default on) plays them in a child process (envs/text/isolated.py)."""
  if env_config.get("isolate", True):
    return IsolatedEnv(factory)
  return factory()


def scienceworld_levels(tasks, variations, per_task: int) -> list[tuple[str, int]]:
  """(task, variation) pairs: `variations` is a list of indices, or a split name ("train",
  "dev", "test") read from the simulator's own split of each task (first `per_task` of it; this
  starts a JVM)."""
  if not isinstance(variations, str):
    return [(t, int(v)) for t in tasks for v in variations]
  env = ScienceWorld([(tasks[0], 0)])
  try:
    return [(t, v) for t in tasks for v in env.variations(t, variations)[:per_task]]
  finally:
    env.close()
