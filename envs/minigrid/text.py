"""Text views for LLM agents: the mission, BabyAI-Text-style relative descriptions of what the
agent sees, the action names, and the ground-truth `state_facts` assertions are checked against.

All functions take one unbatched `core.State` and run on the host (numpy). Relative positions
are in the agent's frame: `forward` steps along its heading, `right` steps to its right
(negative = left), the same frame as the 7x7 view (agent at view cell (3, 6)).

`VIEW` bundles these for `envs.host_adapter.JaxEnvAdapter`; `text_env(task_id)` is a BabyAI task
as a host-loop text env whose `reset(seed)` draws the level from PRNGKey(seed).
"""
import functools

import jax
import numpy as np

from envs.host_adapter import JaxEnvAdapter, TextView
from envs.minigrid import constants as C
from envs.minigrid import core
from envs.minigrid import env as minigrid_env

_observe = jax.jit(core.observe)            # compiled once per grid shape, not run op by op
_view_coords = jax.jit(core.view_world_coords)

# Action names shown to agents, index = action id. MiniGrid allows every action in every state
# (an impossible one leaves the state unchanged), so all are always admissible.
ACTION_TEXT = ("turn left", "turn right", "go forward", "pick up", "drop", "toggle", "done")


def admissible_actions(state: core.State | None = None) -> list[str]:
  """Every action name (MiniGrid allows every action in every state)."""
  del state
  return list(ACTION_TEXT)


def action_id(text: str) -> int:
  """Action id of a name from `ACTION_TEXT` or `constants.ACTION_NAMES` (case-insensitive)."""
  key = text.strip().lower()
  for names in (ACTION_TEXT, C.ACTION_NAMES):
    if key in names:
      return names.index(key)
  raise ValueError(f"unknown action {text!r}; valid: {', '.join(ACTION_TEXT)}")


def describe(cell) -> str:
  """'red ball', 'locked blue door', 'wall', 'nothing' for a cell encoding."""
  typ, color, st = (int(v) for v in cell)
  if typ in (C.EMPTY, C.UNSEEN):
    return "nothing"
  name = C.OBJECT_NAMES[typ]
  if typ == C.WALL:
    return name
  text = f"{C.COLOR_NAMES[color]} {name}"
  if typ == C.DOOR:
    text = f"{C.DOOR_STATE_NAMES[st]} {text}"
  return text


def mission_text(state: core.State) -> str:
  """Farama's mission surface form, e.g. 'go to a red ball', 'pick up the box'."""
  kind, typ, color = (int(v) for v in np.asarray(state.mission))
  noun = C.OBJECT_NAMES[typ] if color < 0 else f"{C.COLOR_NAMES[color]} {C.OBJECT_NAMES[typ]}"
  article = "a" if int(state.mission_count) > 1 else "the"
  verb = "go to" if kind == C.GOTO else "pick up"
  return f"{verb} {article} {noun}"


def _steps(n: int, word: str) -> str:
  return f"{n} step{'s' if n != 1 else ''} {word}"


def relative_phrase(forward: int, right: int) -> str:
  parts = []
  if forward:
    parts.append(_steps(abs(forward), "forward" if forward > 0 else "back"))
  if right:
    parts.append(_steps(abs(right), "right" if right > 0 else "left"))
  return " and ".join(parts) or "here"


def visible_objects(state: core.State) -> list[dict]:
  """Visible non-empty view cells, nearest first: {object, forward, right, cell}."""
  image, visible = (np.asarray(a) for a in _observe(state))
  out = []
  half, last = C.VIEW_SIZE // 2, C.VIEW_SIZE - 1
  for vx in range(C.VIEW_SIZE):
    for vy in range(C.VIEW_SIZE):
      if (vx, vy) == (half, last) or not visible[vx, vy]:
        continue
      if image[vx, vy, 0] in (C.EMPTY, C.UNSEEN):
        continue
      out.append({"object": describe(image[vx, vy]), "forward": last - vy, "right": vx - half,
                  "cell": image[vx, vy]})
  out.sort(key=lambda o: (abs(o["forward"]) + abs(o["right"]), o["forward"], o["right"]))
  return out


def _nearest_walls(objs: list[dict]) -> list[dict]:
  """Only the closest wall straight ahead, to the left and to the right (BabyAI-Text style)."""
  keep = {}
  for o in objs:
    if o["object"] != "wall":
      continue
    if o["right"] == 0:
      side = "ahead"
    elif o["forward"] == 0:
      side = "left" if o["right"] < 0 else "right"
    else:
      continue
    keep.setdefault(side, o)
  return list(keep.values())


def render_text(state: core.State) -> str:
  """Mission, heading, carried object and the visible objects with relative positions."""
  objs = visible_objects(state)
  seen = [o for o in objs if o["object"] != "wall"] + _nearest_walls(objs)
  carried = describe(np.asarray(state.carrying))
  lines = [f"Mission: {mission_text(state)}.",
           f"You are facing {C.DIR_NAMES[int(state.agent_dir)]}. "
           f"You carry {'nothing' if carried == 'nothing' else 'a ' + carried}."]
  if seen:
    lines.append("You see:")
    lines += [f"- a {o['object']} {relative_phrase(o['forward'], o['right'])}" for o in seen]
  else:
    lines.append("You see only empty floor.")
  return "\n".join(lines)


def _relative(state: core.State, x: int, y: int) -> tuple[int, int]:
  ax, ay = (int(v) for v in np.asarray(state.agent_pos))
  fx, fy = C.DIR_TO_VEC[int(state.agent_dir)]
  dx, dy = x - ax, y - ay
  return int(dx * fx + dy * fy), int(dx * -fy + dy * fx)


def state_facts(state: core.State) -> dict:
  """Ground truth for assertion checking (plain Python values, JSON-serialisable)."""
  grid = np.asarray(state.grid)
  ax, ay = (int(v) for v in np.asarray(state.agent_pos))
  fx, fy = (ax, ay) + C.DIR_TO_VEC[int(state.agent_dir)]
  fx, fy = int(fx), int(fy)
  kind, typ, color = (int(v) for v in np.asarray(state.mission))
  image, visible = (np.asarray(a) for a in _observe(state))
  coords = np.asarray(_view_coords(state.agent_pos, state.agent_dir))
  targets = []
  for vx in range(C.VIEW_SIZE):
    for vy in range(C.VIEW_SIZE):
      cell = image[vx, vy]
      if (vx, vy) == (C.VIEW_SIZE // 2, C.VIEW_SIZE - 1) or not visible[vx, vy]:
        continue
      if cell[0] == typ and (color < 0 or cell[1] == color):
        x, y = (int(v) for v in coords[vx, vy])
        fwd, right = _relative(state, x, y)
        targets.append({"cell": [x, y], "forward": fwd, "right": right,
                        "text": relative_phrase(fwd, right)})
  targets.sort(key=lambda t: abs(t["forward"]) + abs(t["right"]))
  doors = [{"cell": [int(x), int(y)], "color": C.COLOR_NAMES[grid[x, y, 1]],
            "state": C.DOOR_STATE_NAMES[grid[x, y, 2]]}
           for x, y in zip(*np.nonzero(grid[..., 0] == C.DOOR))]
  carried = describe(np.asarray(state.carrying))
  return {
      "mission": mission_text(state),
      "agent_cell": [ax, ay],
      "agent_dir": C.DIR_NAMES[int(state.agent_dir)],
      "carrying": None if carried == "nothing" else carried,
      "front_cell": [fx, fy],
      "front_object": describe(grid[fx, fy]),
      "target_visible": bool(targets),
      "target_relative": targets[0] if targets else None,
      "target_in_front": bool(targets) and targets[0]["cell"] == [fx, fy],
      "doors": doors,
      "step": int(state.time),
  }


VIEW = TextView(action_names=ACTION_TEXT, action_id=action_id, render_text=render_text,
                state_facts=state_facts,
                success=lambda facts, env_info: bool(np.asarray(env_info.get("success", False))))


@functools.lru_cache(maxsize=8)
def _babyai(task_id: str) -> minigrid_env.BabyAIEnv:
  # One env per task: every text env of a task shares its compiled reset and step.
  return minigrid_env.BabyAIEnv(task_id)


def text_env(task_id: str) -> JaxEnvAdapter:
  """A BabyAI task (e.g. "BabyAI-GoToLocal-v0") as a host-loop text env.

  Returns:
    a `JaxEnvAdapter` whose `reset(seed)` draws the level from PRNGKey(seed), whose
    observations are `render_text` and whose info holds `state_facts` and `success`.
  """
  return JaxEnvAdapter(_babyai(task_id), view=VIEW)
