"""The six BabyAI tasks: layouts, step limits, missions and their level generators.

Each builder mirrors the task's Farama `gen_mission` (minigrid 3.2, `envs/babyai/goto.py` and
`unlock.py`) step by step, sampling each placement from the mask of positions Farama's
rejection sampling would accept; a whole-level rejection (unreachable object, failed
placement, `connect_all` timeout) redraws the level, as `RoomGridLevel._gen_grid` does.

`Generator(spec)(key) -> core.State` is the jumanji-style level generator; the env calls it on
reset and nothing else depends on how a level was made (`convert.from_minigrid` builds states
from Farama levels instead).
"""
import dataclasses
from typing import Callable

import jax
import jax.numpy as jnp

from envs.minigrid import constants as C
from envs.minigrid import core
from envs.minigrid import rooms
from envs.minigrid.rooms import RoomLayout


@dataclasses.dataclass(frozen=True)
class TaskSpec:
  env_id: str
  layout: RoomLayout
  max_steps: int      # Farama's per-episode step limit (truncation)
  build: Callable     # (key, layout) -> (grid, agent_pos, agent_dir, mission int32 [3], ok)


def matches(grid: jax.Array, mission: jax.Array) -> jax.Array:
  """bool [...]: cells whose object fits the mission's (type, color) description."""
  return (grid[..., 0] == mission[1]) & ((mission[2] < 0) | (grid[..., 1] == mission[2]))


def _distractors(u, grid, layout, agent_pos):
  """`RoomGrid.add_distractors(all_unique=False)`: one random object in a random room per row
  of u [n, 5]. Returns (grid, objects uint8 [n, 3], ok)."""
  def body(t, carry):
    grid, objs, ok = carry
    obj = rooms.random_object(u[t, :2])
    i = rooms.uniform_int(u[t, 2], 0, layout.cols)
    j = rooms.uniform_int(u[t, 3], 0, layout.rows)
    grid, _, placed = rooms.add_object_in_room(u[t, 4], grid, layout, i, j, agent_pos, obj)
    return grid, objs.at[t].set(obj), ok & placed
  objs = jnp.zeros((u.shape[0], 3), jnp.uint8)
  return jax.lax.fori_loop(0, u.shape[0], body, (grid, objs, jnp.bool_(True)))


def _pick_target(u, objs) -> jax.Array:
  obj = objs[rooms.uniform_int(u, 0, objs.shape[0])]
  return jnp.stack([C.GOTO, obj[0], obj[1]]).astype(jnp.int32)


def _single_room_goto(num_dists: int, red_ball: bool, check_reachable: bool):
  """GoToRedBall (red ball + 7 distractors), GoToObj (1 object), GoToLocal (8 distractors)."""
  def build(key, layout):
    draw = rooms.Draws(key, 3 + 5 * num_dists)
    grid = jnp.asarray(layout.walls())
    room = rooms.room_mask(layout, 0, 0)
    pos, direction, ok = rooms.place_agent(draw.take(), grid, room)
    if red_ball:
      ball = jnp.array([C.BALL, C.COLOR["red"], 0], jnp.uint8)
      grid, _, placed = rooms.add_object(draw.take(), grid, room, pos, ball)
      ok &= placed
    grid, objs, placed = _distractors(draw.take(num_dists, 5), grid, layout, pos)
    ok &= placed
    if check_reachable:
      ok &= rooms.objects_reachable(grid, pos)
    if red_ball:
      mission = jnp.array([C.GOTO, C.BALL, C.COLOR["red"]], jnp.int32)
    else:
      mission = _pick_target(draw.take(), objs)
    return grid, pos, direction, mission, ok
  return build


def _build_goto(key, layout):
  """GoTo: agent in a random room, `connect_all`, 18 distractors anywhere, all reachable."""
  n_walls = rooms.internal_walls(layout).shape[0]
  draw = rooms.Draws(key, 4 + 2 * layout.cols * layout.rows + 2 * n_walls + 5 * 18)
  grid = jnp.asarray(layout.walls())
  i = rooms.uniform_int(draw.take(), 0, layout.cols)
  j = rooms.uniform_int(draw.take(), 0, layout.rows)
  pos, direction, ok = rooms.place_agent(draw.take(), grid, rooms.room_mask(layout, i, j))
  offsets = rooms.sample_door_offsets(draw.take(2, layout.cols, layout.rows), layout)
  grid = rooms.connect_all(draw.take(2, n_walls), grid, layout, offsets)
  grid, objs, placed = _distractors(draw.take(18, 5), grid, layout, pos)
  ok = ok & placed & rooms.objects_reachable(grid, pos)
  return grid, pos, direction, _pick_target(draw.take(), objs), ok


def _build_goto_door(key, layout):
  """GoToDoor: four doors (random color, locked with p=1/2) around the centre room; the
  agent starts in it not facing a door; the target is one of the four doors."""
  draw = rooms.Draws(key, 2 * layout.cols * layout.rows + 10)
  grid = jnp.asarray(layout.walls())
  offsets = rooms.sample_door_offsets(draw.take(2, layout.cols, layout.rows), layout)
  colors = rooms.uniform_int(draw.take(4), 0, C.N_COLORS)
  locked = draw.take(4) < 0.5
  for k in range(4):
    state = jnp.where(locked[k], C.DOOR_LOCKED, C.DOOR_CLOSED)
    grid = rooms.put(grid, rooms.door_pos(layout, offsets, 1, 1, k),
                     jnp.stack([C.DOOR, colors[k], state]))
  pos, direction, ok = rooms.place_agent(draw.take(), grid, rooms.room_mask(layout, 1, 1))
  target = colors[rooms.uniform_int(draw.take(), 0, 4)]
  return grid, pos, direction, jnp.stack([C.GOTO, C.DOOR, target]).astype(jnp.int32), ok


def _build_blocked_unlock_pickup(key, layout):
  """BlockedUnlockPickup: a box in the right room, a locked door between the rooms blocked by
  a ball on the left side, the door's key in the left room, the agent in the left room."""
  draw = rooms.Draws(key, 2 * layout.cols * layout.rows + 6)
  color = lambda: rooms.uniform_int(draw.take(), 0, C.N_COLORS)
  grid = jnp.asarray(layout.walls())
  parked = jnp.asarray(layout.default_agent_pos, jnp.int32)   # agent position while placing
  box = jnp.stack([C.BOX, color(), 0])
  grid, _, ok = rooms.add_object(draw.take(), grid, rooms.room_mask(layout, 1, 0), parked, box)
  offsets = rooms.sample_door_offsets(draw.take(2, layout.cols, layout.rows), layout)
  door_at = rooms.door_pos(layout, offsets, 0, 0, 0)
  door_color = color()
  grid = rooms.put(grid, door_at, jnp.stack([C.DOOR, door_color, C.DOOR_LOCKED]))
  grid = rooms.put(grid, door_at - jnp.array([1, 0]), jnp.stack([C.BALL, color(), 0]))
  left = rooms.room_mask(layout, 0, 0)
  grid, _, placed = rooms.add_object(draw.take(), grid, left, parked,
                                     jnp.stack([C.KEY, door_color, 0]))
  pos, direction, agent_ok = rooms.place_agent(draw.take(), grid, left)
  mission = jnp.array([C.PICKUP_MISSION, C.BOX, C.ANY_COLOR], jnp.int32)
  return grid, pos, direction, mission, ok & placed & agent_ok


TASKS: dict[str, TaskSpec] = {spec.env_id: spec for spec in [
    TaskSpec("BabyAI-GoToRedBall-v0", RoomLayout(1, 1, 8), 64, _single_room_goto(7, True, True)),
    TaskSpec("BabyAI-GoToObj-v0", RoomLayout(1, 1, 8), 64, _single_room_goto(1, False, False)),
    TaskSpec("BabyAI-GoToLocal-v0", RoomLayout(1, 1, 8), 64, _single_room_goto(8, False, True)),
    TaskSpec("BabyAI-GoTo-v0", RoomLayout(3, 3, 8), 8 ** 2 * 9, _build_goto),
    TaskSpec("BabyAI-GoToDoor-v0", RoomLayout(3, 3, 7), 7 ** 2 * 9, _build_goto_door),
    TaskSpec("BabyAI-BlockedUnlockPickup-v0", RoomLayout(1, 2, 6), 16 * 6 ** 2,
             _build_blocked_unlock_pickup),
]}


def mission_state(grid, mission) -> tuple[jax.Array, jax.Array]:
  """(target_mask, mission_count) as the verifier's `find_matching_objs` sets them at reset."""
  mask = matches(grid, mission)
  return mask, mask.sum().astype(jnp.int32)


class Generator:
  """Jumanji-style level generator: `Generator(spec)(key) -> core.State` (time 0).

  Rejected draws are redrawn with keys folded from the attempt number, inside a while loop, so
  the generator stays jittable and vmappable."""

  def __init__(self, spec: TaskSpec):
    self.spec = spec

  def __call__(self, key: jax.Array) -> core.State:
    layout = self.spec.layout

    def body(carry):  # the builder is traced once: the first attempt also runs in the loop
      attempt = carry[0]
      return (attempt + 1, *self.spec.build(jax.random.fold_in(key, attempt), layout))

    init = (jnp.int32(0), jnp.asarray(layout.walls()), jnp.zeros(2, jnp.int32), jnp.int32(0),
            jnp.zeros(3, jnp.int32), jnp.bool_(False))
    _, grid, pos, direction, mission, _ = jax.lax.while_loop(lambda c: ~c[-1], body, init)
    target_mask, count = mission_state(grid, mission)
    return core.State(grid=grid, agent_pos=pos, agent_dir=direction,
                      carrying=jnp.array([C.EMPTY, 0, 0], jnp.uint8), mission=mission,
                      mission_count=count, target_mask=target_mask, time=jnp.int32(0))
