"""MiniGrid world dynamics in JAX: the state, the seven actions and the 7x7 egocentric view.

Semantics follow Farama `minigrid` 3.2 (`MiniGridEnv.step`, `Door.toggle`, `Box.toggle`,
`gen_obs_grid`, `Grid.process_vis`) so that `tests/envs/minigrid/test_minigrid_exact.py` can
require identical trajectories. Grids are indexed [x, y] like Farama's `Grid.encode()`.

Shapes: W, H = grid width, height (static per task).
  grid        uint8 [W, H, 3]  (object type, color, door state) per cell
  agent_pos   int32 [2]        (x, y)
  agent_dir   int32 []         0 east, 1 south, 2 west, 3 north
  carrying    uint8 [3]        encoding of the carried object; (EMPTY, 0, 0) when empty-handed
  mission     int32 [3]        (kind GOTO/PICKUP_MISSION, object type, color or ANY_COLOR)
  mission_count int32 []       number of objects matching the mission at reset ("a" vs "the")
  target_mask bool  [W, H]     cells the BabyAI GoTo verifier accepts (its `obj_poss`)
  time        int32 []         steps taken (Farama's `step_count`)
"""
import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from envs.minigrid import constants as C

_DIR_TO_VEC = jnp.asarray(C.DIR_TO_VEC)
_EMPTY_CELL = jnp.array([C.EMPTY, 0, 0], jnp.uint8)
_WALL_CELL = jnp.array([C.WALL, C.GREY, 0], jnp.uint8)


@struct.dataclass
class State:
  grid: jax.Array
  agent_pos: jax.Array
  agent_dir: jax.Array
  carrying: jax.Array
  mission: jax.Array
  mission_count: jax.Array
  target_mask: jax.Array
  time: jax.Array


def front_pos(state: State) -> jax.Array:
  return state.agent_pos + _DIR_TO_VEC[state.agent_dir]


def can_overlap(cell: jax.Array) -> jax.Array:
  """Farama `can_overlap`: empty, floor, goal, lava and open doors can be walked onto."""
  typ, st = cell[..., 0], cell[..., 2]
  return ((typ == C.EMPTY) | (typ == C.FLOOR) | (typ == C.GOAL) | (typ == C.LAVA)
          | ((typ == C.DOOR) & (st == C.DOOR_OPEN)))


def see_behind(cell: jax.Array) -> jax.Array:
  """Farama `see_behind`: walls and closed or locked doors occlude; everything else does not."""
  typ, st = cell[..., 0], cell[..., 2]
  return ~((typ == C.WALL) | ((typ == C.DOOR) & (st != C.DOOR_OPEN)))


def can_pickup(cell: jax.Array) -> jax.Array:
  typ = cell[..., 0]
  return (typ == C.KEY) | (typ == C.BALL) | (typ == C.BOX)


def success_reward(time: jax.Array, max_steps: int) -> jax.Array:
  """Farama `_reward`: 1 - 0.9 * step_count / max_steps."""
  return 1.0 - 0.9 * (time.astype(jnp.float32) / max_steps)


def step_world(state: State, action: jax.Array) -> tuple[State, jax.Array, jax.Array]:
  """One MiniGrid action (no mission logic). Returns (state, reached_goal, reached_lava).

  Mirrors `MiniGridEnv.step`: turning changes only the direction; forward moves onto cells that
  can be overlapped; pickup takes a key/ball/box when empty-handed; drop needs an empty front
  cell; toggle opens/closes unlocked doors, unlocks a locked door with a same-colored key (and
  opens it), and replaces a box by its (always empty here) contents; done does nothing.
  """
  action = jnp.asarray(action, jnp.int32)
  fwd = front_pos(state)
  cell = state.grid[fwd[0], fwd[1]]
  typ, col, st = cell[0], cell[1], cell[2]
  empty_handed = state.carrying[0] == C.EMPTY

  new_dir = jnp.where(action == C.LEFT, (state.agent_dir + 3) % 4,
                      jnp.where(action == C.RIGHT, (state.agent_dir + 1) % 4, state.agent_dir))
  move = (action == C.FORWARD) & can_overlap(cell)
  new_pos = jnp.where(move, fwd, state.agent_pos)
  reached_goal = (action == C.FORWARD) & (typ == C.GOAL)
  reached_lava = (action == C.FORWARD) & (typ == C.LAVA)

  do_pickup = (action == C.PICKUP) & can_pickup(cell) & empty_handed
  do_drop = (action == C.DROP) & (typ == C.EMPTY) & ~empty_handed
  toggle = action == C.TOGGLE
  is_door = typ == C.DOOR
  has_key = (state.carrying[0] == C.KEY) & (state.carrying[1] == col)
  unlock = toggle & is_door & (st == C.DOOR_LOCKED) & has_key
  flip = toggle & is_door & (st != C.DOOR_LOCKED)
  new_door_state = jnp.where(unlock, C.DOOR_OPEN,
                             jnp.where(flip, jnp.where(st == C.DOOR_OPEN, C.DOOR_CLOSED,
                                                       C.DOOR_OPEN), st)).astype(jnp.uint8)
  open_box = toggle & (typ == C.BOX)

  new_cell = jnp.where(do_pickup | open_box, _EMPTY_CELL,
                       jnp.where(do_drop, state.carrying, cell.at[2].set(new_door_state)))
  grid = state.grid.at[fwd[0], fwd[1]].set(new_cell)
  carrying = jnp.where(do_pickup, cell, jnp.where(do_drop, _EMPTY_CELL, state.carrying))
  new_state = state.replace(grid=grid, agent_pos=new_pos, agent_dir=new_dir, carrying=carrying,
                            time=state.time + 1)
  return new_state, reached_goal, reached_lava


def _view_offsets() -> np.ndarray:
  """int32 [4, 7, 7, 2]: per direction, the world offset of every view cell [vx, vy].

  The agent sits at view cell (3, 6) looking towards vy = 0; inverting Farama's
  `get_view_coords` gives world = pos + f * (6 - vy) + r * (vx - 3), r = (-f_y, f_x).
  Tabulated so that rotating the view is a row lookup, not per-direction arithmetic.
  """
  v = np.arange(C.VIEW_SIZE)
  fwd_steps = (C.VIEW_SIZE - 1 - v)[None, :, None]          # by vy
  right_steps = (v - C.VIEW_SIZE // 2)[:, None, None]       # by vx
  out = []
  for f in C.DIR_TO_VEC:
    r = np.array([-f[1], f[0]])
    out.append(f[None, None, :] * fwd_steps + r[None, None, :] * right_steps)
  return np.stack(out).astype(np.int32)


_VIEW_OFFSETS = _view_offsets()
_AGENT_CELL = np.zeros((C.VIEW_SIZE, C.VIEW_SIZE, 1), bool)
_AGENT_CELL[C.VIEW_SIZE // 2, C.VIEW_SIZE - 1] = True


def view_world_coords(agent_pos: jax.Array, agent_dir: jax.Array) -> jax.Array:
  """World (x, y) of every view cell, int32 [7, 7, 2] indexed [vx, vy]."""
  return agent_pos[None, None, :] + jnp.asarray(_VIEW_OFFSETS)[agent_dir]


def _row_table() -> np.ndarray:
  """Farama's `process_vis` for one view row, tabulated: int32 [128 * 128].

  Entry m * 128 + t, for the row's incoming lit bits m and see-through bits t (bit i = column
  vx = i), holds the row's final lit bits | (bits it lights in the next row out) << 7. Built by
  running Farama's two passes literally (left to right over columns 0..5, then right to left
  over 6..1) on all 2^14 (m, t) pairs at once: a lit see-through cell lights its neighbour in
  the pass direction and, in the next row, itself and that neighbour.
  """
  n = C.VIEW_SIZE
  code = np.arange(1 << (2 * n))
  m, t = code >> n, code & ((1 << n) - 1)
  lit = [(m >> i) & 1 for i in range(n)]
  see = [(t >> i) & 1 for i in range(n)]
  nxt = [np.zeros_like(code) for _ in range(n)]
  for order, step in ((range(n - 1), 1), (range(n - 1, 0, -1), -1)):
    for i in order:
      on = lit[i] & see[i]
      lit[i + step] = lit[i + step] | on
      nxt[i + step] = nxt[i + step] | on
      nxt[i] = nxt[i] | on
  out = sum(lit[i] << i for i in range(n)) | (sum(nxt[i] << i for i in range(n)) << n)
  return out.astype(np.int32)


_ROW_TABLE = _row_table()
_BITS = 1 << np.arange(C.VIEW_SIZE, dtype=np.int32)


def _visibility(transparent: jax.Array) -> jax.Array:
  """Farama `Grid.process_vis` on the rotated view: bool [7, 7] indexed [vx, vy].

  Farama walks rows from the agent's (vy = 6) outwards and a row's result depends only on the
  cells it lit in the row before and its own see-through cells, so each row is one lookup in
  `_ROW_TABLE` (seven chained scalar gathers instead of per-cell passes).
  """
  n = C.VIEW_SIZE
  codes = (transparent.astype(jnp.int32) * _BITS[:, None]).sum(0)     # [vy]: see-through bits
  table = jnp.asarray(_ROW_TABLE)
  incoming = jnp.int32(1 << (n // 2))                                  # the agent's own cell
  rows = [None] * n
  for j in reversed(range(n)):
    entry = table[incoming * (1 << n) + codes[j]]
    rows[j] = entry & ((1 << n) - 1)
    incoming = entry >> n
  lit = jnp.stack(rows)                                                # [vy]
  return ((lit[None, :] & _BITS[:, None]) != 0)


def view_cells(state: State) -> jax.Array:
  """The unmasked egocentric 7x7 slice, uint8 [7, 7, 3]; outside the grid reads as grey wall.

  One gather of 49 cells from the flattened grid (a flat index per cell is cheaper under vmap
  than a two-coordinate gather)."""
  coords = view_world_coords(state.agent_pos, state.agent_dir)
  w, h = state.grid.shape[:2]
  x, y = coords[..., 0], coords[..., 1]
  inside = (x >= 0) & (x < w) & (y >= 0) & (y < h)
  cells = state.grid.reshape(w * h, 3)[jnp.where(inside, x * h + y, 0)]
  return jnp.where(inside[..., None], cells, _WALL_CELL)


def observe(state: State) -> tuple[jax.Array, jax.Array]:
  """Farama `gen_obs()['image']` and its visibility mask: (uint8 [7, 7, 3], bool [7, 7]).

  Unseen cells encode as (0, 0, 0); the agent's own cell shows what it carries (or empty).
  """
  cells = view_cells(state)
  visible = _visibility(see_behind(cells))
  image = jnp.where(visible[..., None], cells, jnp.zeros_like(cells))
  # a static select rather than `.at[].set`, which XLA emits as a separate copy + update
  return jnp.where(_AGENT_CELL, state.carrying, image), visible
