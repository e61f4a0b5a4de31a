"""Builds a tiny ALFWorld household game in ALFWorld's own on-disk format, fully offline.

ALFWorld's real games (the `json_2.1.1` tree that `alfworld-download` fetches) are not available
here, so tests and the CPU demo write a small game with the same layout and play it through the
same adapter as real games:

  <root>/json_2.1.1/<split>/<task_type>-<Obj>-None-<Recep>-<scene>/trial_<id>/
      initial_state.pddl   the PDDL problem over the shipped `alfred` domain
      traj_data.json       task type and `pddl_params` (ALFWorld's goal templates read them)
      game.tw-pddl         {"pddl_domain", "grammar", "pddl_problem", "solvable", "walkthrough"}

The domain and grammar are the files the `alfworld` package ships (`alfworld/data/alfred.pddl`,
`alfred.twl2`); the grammar's goal placeholder is filled with `add_task_to_grammar`, exactly as
`alfworld-generate` does. Object ids use ALFRED's mangled form (`Apple_bar__plus_00_dot_10...`)
so that ALFWorld's demangler names them "apple 1", "cabinet 1", ...
"""
import json
import os
import random

# A kitchen with a countertop (start of the apple), an openable cabinet (the goal receptacle), a
# fridge and a sink: enough for go to / open / take / put, and for failing actions.
_RECEPTACLES = {  # mangled id -> (type, openable, location)
    "CounterTop_bar__plus_00_dot_10_bar__plus_00_dot_90_bar__plus_00_dot_20":
        ("CounterTop", False, "loc_bar_1_bar_0_bar_0_bar_30"),
    "Cabinet_bar__minus_01_dot_00_bar__plus_00_dot_40_bar__plus_00_dot_50":
        ("Cabinet", True, "loc_bar_2_bar_1_bar_90_bar_30"),
    "Fridge_bar__minus_02_dot_10_bar__plus_00_dot_00_bar__plus_01_dot_00":
        ("Fridge", True, "loc_bar_3_bar_2_bar_180_bar_30"),
    # ALFRED names sink basins "Sink|...|SinkBasin"; the demangler turns that into "sinkbasin 1"
    "Sink_bar__plus_01_dot_50_bar__plus_00_dot_80_bar__minus_00_dot_40_bar_SinkBasin":
        ("SinkBasin", False, "loc_bar_4_bar_0_bar_270_bar_30"),
}
_START = "loc_bar_0_bar_0_bar_0_bar_30"


def _problem(obj_type: str, obj_start: str, goal_type: str) -> str:
  obj_id = f"{obj_type}_bar__plus_00_dot_12_bar__plus_00_dot_95_bar__plus_00_dot_22"
  start_recep = next(r for r, (t, _, _) in _RECEPTACLES.items() if t == obj_start)
  locations = sorted({loc for _, _, loc in _RECEPTACLES.values()} | {_START})
  rtypes = sorted({t for t, _, _ in _RECEPTACLES.values()})
  objects = ["agent1 - agent", f"{obj_id} - object"]
  objects += [f"{r} - receptacle" for r in _RECEPTACLES]
  objects += [f"{loc} - location" for loc in locations]
  objects += [f"{obj_type}Type - otype"] + [f"{t}Type - rtype" for t in rtypes]
  init = [f"(atLocation agent1 {_START})", f"(objectType {obj_id} {obj_type}Type)",
          f"(pickupable {obj_id})", f"(inReceptacle {obj_id} {start_recep})",
          f"(objectAtLocation {obj_id} {_RECEPTACLES[start_recep][2]})"]
  for r, (t, openable, loc) in _RECEPTACLES.items():
    init += [f"(receptacleAtLocation {r} {loc})", f"(receptacleType {r} {t}Type)",
             f"(canContain {t}Type {obj_type}Type)"]
    if openable:
      init.append(f"(openable {r})")
  goal = (f"(:goal (and (exists (?r - receptacle) (exists (?o - object) (and (inReceptacle ?o ?r)"
          f" (objectType ?o {obj_type}Type) (receptacleType ?r {goal_type}Type))))))")
  sep = "\n        "
  return (f"(define (problem plan_tiny)\n    (:domain alfred)\n    (:objects\n        "
          f"{sep.join(objects)}\n    )\n    (:init\n        {sep.join(init)}\n    )\n"
          f"    {goal}\n)\n")


def shipped_logic() -> tuple[str, str]:
  """The PDDL domain and text grammar the alfworld package ships."""
  import alfworld  # pylint: disable=import-outside-toplevel  # optional `envs` extra
  data = os.path.join(os.path.dirname(alfworld.__file__), "data")
  with open(os.path.join(data, "alfred.pddl")) as f:
    domain = f.read()
  with open(os.path.join(data, "alfred.twl2")) as f:
    grammar = f.read()
  return domain, grammar


def write_tiny_game(root: str, split: str = "train", obj: str = "Apple",
                    start: str = "CounterTop", goal: str = "Cabinet", trial: str = "T0001",
                    seed: int = 0) -> str:
  """Writes one pick-and-place game under `root` (an ALFWORLD_DATA dir); returns its game file.

  The walkthrough stored in the game file is the hand-derived shortest solution; the adapter's
  expert replays it, and tests check it wins.
  """
  # alfworld (the optional `envs` extra) pulls in textworld and spacy: imported on writing a game
  from alfworld.agents.utils.misc import add_task_to_grammar  # pylint: disable=C0415
  types = {t for t, _, _ in _RECEPTACLES.values()}
  if start not in types or goal not in types:
    raise ValueError(f"start/goal must be one of {sorted(types)}, got {start!r}/{goal!r}")
  task_dir = os.path.join(root, "json_2.1.1", split,
                          f"pick_and_place_simple-{obj}-None-{goal}-1", f"trial_{trial}")
  os.makedirs(task_dir, exist_ok=True)
  traj = {"task_type": "pick_and_place_simple", "scene": {"floor_plan": "FloorPlan1"},
          "pddl_params": {"object_target": obj, "parent_target": goal, "toggle_target": "",
                          "mrecep_target": "", "object_sliced": False},
          "turk_annotations": {"anns": [{"task_desc": f"Put the {obj.lower()} in the "
                                                      f"{goal.lower()}."}]}}
  problem = _problem(obj, start, goal)
  domain, grammar = shipped_logic()
  # ALFWorld draws the goal's template from the global `random` (its `rng` argument is not passed
  # on), so the draw runs under a state seeded here, and the caller's global state is restored.
  outer = random.getstate()
  random.seed(seed)
  try:
    grammar = add_task_to_grammar(grammar, traj, rng=random.Random(seed))
  finally:
    random.setstate(outer)
  goal_openable = next(o for t, o, _ in _RECEPTACLES.values() if t == goal)
  start_openable = next(o for t, o, _ in _RECEPTACLES.values() if t == start)
  o, s, g = obj.lower(), start.lower(), goal.lower()
  walkthrough = [f"go to {s} 1"] + ([f"open {s} 1"] if start_openable else [])
  walkthrough += [f"take {o} 1 from {s} 1", f"go to {g} 1"]
  walkthrough += ([f"open {g} 1"] if goal_openable else []) + [f"move {o} 1 to {g} 1"]
  with open(os.path.join(task_dir, "initial_state.pddl"), "w") as f:
    f.write(problem)
  with open(os.path.join(task_dir, "traj_data.json"), "w") as f:
    json.dump(traj, f, indent=1)
  game_file = os.path.join(task_dir, "game.tw-pddl")
  with open(game_file, "w") as f:
    json.dump({"pddl_domain": domain, "grammar": grammar, "pddl_problem": problem,
               "solvable": True, "walkthrough": walkthrough}, f)
  return game_file
