"""`from_minigrid(env)`: a Farama `minigrid` BabyAI env's current level as our state.

Reads the layout (`grid.encode()`), agent position and direction, carried object, step count,
step limit and the verifier's instruction (`instrs`) with its current target positions, so
that stepping our env from the returned state reproduces Farama's trajectory exactly. Only the
instructions the six tasks use are supported (GoTo and Pickup without location words); boxes
must be empty. Anything else raises ValueError rather than silently diverging.
"""
import jax.numpy as jnp
import numpy as np

from envs.minigrid import constants as C
from envs.minigrid import core
from envs.minigrid.env import EnvParams


def _encode(obj) -> np.ndarray:
  if obj is None:
    return np.array([C.EMPTY, 0, 0], np.uint8)
  if obj.type == "box" and obj.contains is not None:
    raise ValueError("boxes with contents are not supported")
  return np.asarray(obj.encode(), np.uint8)


def from_minigrid(env) -> tuple[core.State, EnvParams]:
  """Returns (state, params) for a reset (and possibly stepped) Farama BabyAI env."""
  env = env.unwrapped
  instr = getattr(env, "instrs", None)
  name = type(instr).__name__
  if name == "GoToInstr":
    kind = C.GOTO
  elif name == "PickupInstr":
    kind = C.PICKUP_MISSION
  else:
    raise ValueError(f"unsupported BabyAI instruction {name!r} (need GoToInstr or PickupInstr)")
  desc = instr.desc
  if desc.loc is not None or desc.type is None:
    raise ValueError(f"unsupported object description {desc!r} (no locations, type required)")
  for obj in env.grid.grid:
    if obj is not None and obj.type == "box" and obj.contains is not None:
      raise ValueError("boxes with contents are not supported")
  if kind == C.PICKUP_MISSION and getattr(instr, "preCarrying", None) is not env.carrying:
    # Pickup's verifier remembers what was carried before the step; our state only knows now.
    raise ValueError("Pickup verifier history differs from the carried object")
  grid = env.grid.encode()                                  # [W, H, 3], Farama's layout
  target_mask = np.zeros(grid.shape[:2], bool)
  for x, y in desc.obj_poss:
    target_mask[x, y] = True
  color = C.ANY_COLOR if desc.color is None else C.COLOR[desc.color]
  mission = np.array([kind, C.OBJ[desc.type], color], np.int32)
  state = core.State(
      grid=jnp.asarray(grid, jnp.uint8),
      agent_pos=jnp.asarray(np.asarray(env.agent_pos), jnp.int32),
      agent_dir=jnp.int32(env.agent_dir),
      carrying=jnp.asarray(_encode(env.carrying)),
      mission=jnp.asarray(mission),
      mission_count=jnp.int32(len(desc.obj_set)),
      target_mask=jnp.asarray(target_mask),
      time=jnp.int32(env.step_count))
  return state, EnvParams(max_steps_in_episode=int(env.max_steps))
