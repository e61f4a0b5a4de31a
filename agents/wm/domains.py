"""Task domains for the evaluation's domain breakdown: every eval level gets one domain label.

  scienceworld  the topic the `scienceworld` package assigns the task in its own tasks.json
                (Matter, Measurement, Electricity, Classification, Biology, Chemistry, Forces)
  alfworld      the ALFWorld task type, read from the game folder name (pick_and_place_simple, ...)
  textworld     `tw-make custom` games have no task type; their generator settings stand in
                (rooms / objects / quest length, read from the file name `make_games` writes)

    label = domain("scienceworld", ("boil", 3))      # -> "Matter"
"""
import functools
import json
import os
import re
from importlib import resources

_TW_NAME = re.compile(r"tw_w(\d+)_o(\d+)_q(\d+)_s\d+")


@functools.cache
def scienceworld_topics() -> dict[str, str]:
  """task name -> topic, from the tasks.json shipped inside the scienceworld package."""
  with resources.files("scienceworld").joinpath("tasks.json").open() as f:
    return {t["task_name"]: t["topic"] for t in json.load(f)}


def domain(env: str, level) -> str:
  """Domain label of one eval level (the level descriptors of `envs.text.sources` sources:
  (task, variation) for ScienceWorld, a game file path for ALFWorld and TextWorld)."""
  if env == "scienceworld":
    topics = scienceworld_topics()
    if level[0] not in topics:
      raise KeyError(f"ScienceWorld task {level[0]!r} is not in the package's tasks.json")
    return topics[level[0]]
  if env == "alfworld":
    # .../<task_type>-<object>-<...>/trial_.../game.tw-pddl
    folder = os.path.basename(os.path.dirname(os.path.dirname(str(level))))
    return folder.split("-", 1)[0] or "unknown"
  if env == "textworld":
    m = _TW_NAME.search(os.path.basename(str(level)))
    if m is None:
      return "textworld game"
    return f"custom ({m.group(1)} rooms, {m.group(2)} objects, quest {m.group(3)})"
  raise ValueError(f"unknown env {env!r}")
