"""Room-grid level-building blocks in JAX (the parts of Farama's `RoomGrid` the tasks use).

Farama builds levels by rejection sampling (`place_obj`, `place_agent`, `connect_all`,
`check_objs_reachable`). Rejection sampling until acceptance draws uniformly from the accepted
set, so each step here samples directly from a mask of acceptable cells: the distribution of
levels is Farama's, the random stream is not. Everything is jit/vmap friendly.

A room grid has `rows x cols` square rooms of side `size` sharing walls:
width = (size - 1) * cols + 1, height = (size - 1) * rows + 1, room (i, j) spans
x in [i*(size-1), i*(size-1)+size), y in [j*(size-1), j*(size-1)+size).
"""
import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from envs.minigrid import constants as C


@dataclasses.dataclass(frozen=True)
class RoomLayout:
  rows: int
  cols: int
  size: int

  @property
  def width(self) -> int:
    return (self.size - 1) * self.cols + 1

  @property
  def height(self) -> int:
    return (self.size - 1) * self.rows + 1

  @property
  def default_agent_pos(self) -> tuple[int, int]:
    """Where `RoomGrid._gen_grid` parks the agent before a mission places it (centre room)."""
    step = self.size - 1
    return ((self.cols // 2) * step + self.size // 2, (self.rows // 2) * step + self.size // 2)

  def walls(self) -> np.ndarray:
    """uint8 [W, H, 3]: every room's wall rectangle, everything else empty."""
    grid = np.zeros((self.width, self.height, 3), np.uint8)
    grid[..., 0] = C.EMPTY
    step = self.size - 1
    wall = (C.WALL, C.GREY, 0)
    for k in range(self.cols + 1):
      grid[k * step, :] = wall
    for k in range(self.rows + 1):
      grid[:, k * step] = wall
    return grid


def room_mask(layout: RoomLayout, i: jax.Array, j: jax.Array) -> jax.Array:
  """bool [W, H]: the rectangle of room (i, j), walls included (as Farama's place_in_room)."""
  xs = jnp.arange(layout.width)[:, None]
  ys = jnp.arange(layout.height)[None, :]
  x0, y0 = i * (layout.size - 1), j * (layout.size - 1)
  return (xs >= x0) & (xs < x0 + layout.size) & (ys >= y0) & (ys < y0 + layout.size)


class Draws:
  """Pre-drawn uniforms in [0, 1), handed out in order.

  One `jax.random.uniform` call per level instead of one threefry per decision keeps compile
  times and CPU cost low; consumers turn a uniform into an integer or a cell index exactly."""

  def __init__(self, key: jax.Array, n: int):
    self.u = jax.random.uniform(key, (n,))
    self.n, self.i = n, 0

  def take(self, *shape: int) -> jax.Array:
    size = int(np.prod(shape, dtype=np.int64))
    if self.i + size > self.n:
      raise ValueError(f"Draws exhausted: {self.i} + {size} > {self.n}")
    out = self.u[self.i:self.i + size].reshape(shape)
    self.i += size
    return out


def uniform_int(u: jax.Array, low, high) -> jax.Array:
  """Uniform integer in [low, high) from u in [0, 1)."""
  n = high - low
  return (low + jnp.minimum(jnp.floor(u * n).astype(jnp.int32), n - 1)).astype(jnp.int32)


def pick_index(u: jax.Array, flat_mask: jax.Array) -> tuple[jax.Array, jax.Array]:
  """A uniform True index of a 1-D bool mask from u in [0, 1): (index, ok).

  The index is that of the (r+1)-th True entry, r = uniform_int(u, 0, count). XLA on CPU lowers
  a cumsum of n entries to an O(n^2) reduce_window (about 2M adds for place_agent's 19x19x4
  mask), so the mask is cut into ~sqrt(n) chunks: pick the chunk by a cumsum of chunk counts,
  then the entry by a cumsum inside that chunk. Same index as the flat cumsum, in O(n).
  """
  n = flat_mask.shape[0]
  width = int(np.ceil(np.sqrt(n)))
  chunks = -(-n // width)
  m = jnp.pad(flat_mask.astype(jnp.int32), (0, chunks * width - n)).reshape(chunks, width)
  per_chunk = m.sum(1)
  before_end = jnp.cumsum(per_chunk)
  total = before_end[-1]
  r = uniform_int(u, 0, jnp.maximum(total, 1))
  chunk = jnp.argmax(before_end > r)
  rest = r - (before_end[chunk] - per_chunk[chunk])
  col = jnp.argmax(jnp.cumsum(m[chunk]) > rest)
  return (chunk * width + col).astype(jnp.int32), total > 0


def sample_cell(u: jax.Array, mask: jax.Array) -> tuple[jax.Array, jax.Array]:
  """A uniform cell of a bool [W, H] mask: (int32 [2] (x, y), ok). ok is False if none exists."""
  idx, ok = pick_index(u, mask.reshape(-1))
  h = mask.shape[1]
  return jnp.stack([idx // h, idx % h]).astype(jnp.int32), ok


def near(pos: jax.Array, shape: tuple[int, int]) -> jax.Array:
  """bool [W, H]: cells at Manhattan distance < 2 of pos (Farama's `reject_next_to`)."""
  xs = jnp.arange(shape[0])[:, None]
  ys = jnp.arange(shape[1])[None, :]
  return (jnp.abs(xs - pos[0]) + jnp.abs(ys - pos[1])) < 2


def is_free(grid: jax.Array) -> jax.Array:
  return grid[..., 0] == C.EMPTY


def put(grid: jax.Array, pos: jax.Array, cell, where=True) -> jax.Array:
  cell = jnp.asarray(cell, jnp.uint8)
  return grid.at[pos[0], pos[1]].set(jnp.where(where, cell, grid[pos[0], pos[1]]))


def add_object(u, grid, mask, agent_pos, cell):
  """`RoomGrid.add_object`/`place_in_room`: a free cell of `mask` not next to the agent.

  Returns (grid, pos, ok)."""
  valid = mask & is_free(grid) & ~near(agent_pos, grid.shape[:2])
  pos, ok = sample_cell(u, valid)
  return put(grid, pos, cell, ok), pos, ok


def add_object_in_room(u, grid, layout: RoomLayout, i, j, agent_pos, cell):
  """`add_object(u, grid, room_mask(layout, i, j), agent_pos, cell)` on the room's
  size x size window instead of the whole grid (7x fewer cells on the 3x3-room levels).

  The window lists the room's cells in the same x-major order as the full grid, so the same
  uniform picks the same cell. Returns (grid, pos, ok)."""
  x0, y0 = i * (layout.size - 1), j * (layout.size - 1)
  window = jax.lax.dynamic_slice(grid[..., 0], (x0, y0), (layout.size, layout.size))
  xs = x0 + jnp.arange(layout.size)[:, None]
  ys = y0 + jnp.arange(layout.size)[None, :]
  near_agent = (jnp.abs(xs - agent_pos[0]) + jnp.abs(ys - agent_pos[1])) < 2
  local, ok = sample_cell(u, (window == C.EMPTY) & ~near_agent)
  pos = (local + jnp.stack([x0, y0])).astype(jnp.int32)
  return put(grid, pos, cell, ok), pos, ok


def random_object(u: jax.Array) -> jax.Array:
  """uint8 [3]: a key, ball or box of a uniform color (Farama's distractor draw); u: [2]."""
  typ = jnp.array([C.KEY, C.BALL, C.BOX])[uniform_int(u[0], 0, 3)]
  color = uniform_int(u[1], 0, C.N_COLORS)
  return jnp.stack([typ, color, 0]).astype(jnp.uint8)


def place_agent(u, grid, mask) -> tuple[jax.Array, jax.Array, jax.Array]:
  """`RoomGrid.place_agent`: a free cell of `mask` and a direction whose front cell is empty
  or a wall. Returns (pos, dir, ok)."""
  w, h = grid.shape[:2]
  padded = jnp.pad(grid[..., 0], 1, constant_values=C.WALL)
  fronts = []
  for dx, dy in C.DIR_TO_VEC:
    front = padded[1 + dx:1 + dx + w, 1 + dy:1 + dy + h]
    fronts.append((front == C.EMPTY) | (front == C.WALL))
  valid = (mask & is_free(grid))[..., None] & jnp.stack(fronts, axis=-1)   # [W, H, 4]
  idx, ok = pick_index(u, valid.reshape(-1))
  pos = jnp.stack([idx // (h * 4), (idx // 4) % h]).astype(jnp.int32)
  return pos, (idx % 4).astype(jnp.int32), ok


def sample_door_offsets(u, layout: RoomLayout) -> tuple[jax.Array, jax.Array]:
  """Door positions along every shared wall, as `RoomGrid._gen_grid` draws them.

  Returns (east_y, south_x), int32 [cols, rows] each: the door between room (i, j) and its east
  neighbour sits at (i*(size-1)+size-1, east_y[i, j]); towards its south neighbour at
  (south_x[i, j], j*(size-1)+size-1). Entries without a neighbour are unused.
  u: uniforms [2, cols, rows].
  """
  step = layout.size - 1
  tops_x = jnp.arange(layout.cols)[:, None] * step
  tops_y = jnp.arange(layout.rows)[None, :] * step
  east_y = tops_y + uniform_int(u[0], 1, layout.size - 1)
  south_x = tops_x + uniform_int(u[1], 1, layout.size - 1)
  return east_y.astype(jnp.int32), south_x.astype(jnp.int32)


def door_pos(layout: RoomLayout, offsets, i, j, k) -> jax.Array:
  """Position of side k (0 east, 1 south, 2 west, 3 north) of room (i, j): int32 [2]."""
  east_y, south_x = offsets
  step = layout.size - 1
  ci, cj = jnp.clip(i - 1, 0), jnp.clip(j - 1, 0)
  xs = jnp.stack([i * step + step, south_x[i, j], i * step, south_x[i, cj]])
  ys = jnp.stack([east_y[i, j], j * step + step, east_y[ci, j], j * step])
  return jnp.stack([xs[k], ys[k]]).astype(jnp.int32)


def internal_walls(layout: RoomLayout) -> np.ndarray:
  """int32 [n_walls, 3]: (i, j, side) for every wall between two rooms, side 0 east / 1 south."""
  walls = [(i, j, 0) for i in range(layout.cols - 1) for j in range(layout.rows)]
  walls += [(i, j, 1) for i in range(layout.cols) for j in range(layout.rows - 1)]
  return np.asarray(walls, np.int32).reshape(-1, 3)


def _connected(layout: RoomLayout, opened: jax.Array) -> jax.Array:
  """For each row of opened [P, n_walls] (bool), whether all rooms are mutually reachable."""
  walls = internal_walls(layout)
  n_rooms = layout.rows * layout.cols
  ends = np.zeros((walls.shape[0], n_rooms, n_rooms), np.float32)   # wall -> room adjacency
  for w, (i, j, side) in enumerate(walls):
    a, b = i * layout.rows + j, (i + 1 - side) * layout.rows + j + side
    ends[w, a, b] = ends[w, b, a] = 1.0
  adj = jnp.einsum("pw,wab->pab", opened.astype(jnp.float32), ends) + jnp.eye(n_rooms)
  r = jnp.zeros((opened.shape[0], n_rooms)).at[:, 0].set(1.0)
  for _ in range(n_rooms - 1):
    r = jnp.minimum(jnp.einsum("pa,pab->pb", r, adj), 1.0)
  return (r > 0).all(axis=1)


def connect_all(u, grid, layout: RoomLayout, offsets):
  """`RoomGrid.connect_all` for levels without locked rooms.

  Farama repeatedly draws a uniform (room, side) and adds a closed door of a uniform color if
  that side leads to a neighbour and has no door yet, until all rooms are connected. Skipped
  draws do not matter, and both sides of a wall are equally likely, so the walls receive doors
  in a uniformly random order, stopping at the first prefix that connects every room. We draw
  that order directly (argsort of uniforms) and find the prefix without a loop.
  Farama's 5000-draw cap is never reached in practice and is not modelled.

  u: uniforms [2, n_walls] (order keys, colors). Returns grid with the doors added.
  """
  walls = internal_walls(layout)
  n = walls.shape[0]
  order = jnp.argsort(u[0])
  rank = jnp.argsort(order)                                   # position of each wall in order
  opened = rank[None, :] < jnp.arange(1, n + 1)[:, None]      # [prefix length - 1, wall]
  stop = jnp.argmax(_connected(layout, opened))               # first connecting prefix
  add = opened[stop]
  colors = uniform_int(u[1], 0, C.N_COLORS)
  east_y, south_x = offsets
  step = layout.size - 1
  i, j, side = (jnp.asarray(walls[:, k]) for k in range(3))
  xs = jnp.where(side == 0, i * step + step, south_x[i, j])
  ys = jnp.where(side == 0, east_y[i, j], j * step + step)
  doors = jnp.stack([jnp.full(n, C.DOOR), colors, jnp.full(n, C.DOOR_CLOSED)], -1)
  new = jnp.where(add[:, None], doors.astype(jnp.uint8), grid[xs, ys])
  return grid.at[xs, ys].set(new)


def objects_reachable(grid: jax.Array, agent_pos: jax.Array) -> jax.Array:
  """`RoomGridLevel.check_objs_reachable`: every non-wall object is reachable from the agent
  walking through empty cells and doors (of any state) without moving anything.

  Flood fill on bit-packed columns (bit y of word x is cell (x, y)): one dilation is a few
  shifts of W words instead of elementwise ops over W * H cells."""
  typ = grid[..., 0]
  w, h = typ.shape
  if h > 31:  # bit h (one past the grid) must still fit in the word
    raise ValueError(f"objects_reachable packs columns into uint32: height {h} > 31")
  bits = jnp.left_shift(jnp.uint32(1), jnp.arange(h, dtype=jnp.uint32))
  pack = lambda m: (m.astype(jnp.uint32) * bits).sum(1, dtype=jnp.uint32)   # distinct bits: OR
  passable = pack((typ == C.EMPTY) | (typ == C.DOOR))
  objects = pack((typ != C.EMPTY) & (typ != C.WALL))

  def dilate(m):  # 4-neighbourhood; a bit shifted past row h - 1 is never passable or an object
    p = jnp.pad(m, 1)
    return m | (m << 1) | (m >> 1) | p[:-2] | p[2:]

  start = jnp.zeros(w, jnp.uint32).at[agent_pos[0]].set(
      jnp.left_shift(jnp.uint32(1), agent_pos[1].astype(jnp.uint32)))

  def body(carry):  # several dilations per iteration: fewer (costly) while-loop round trips
    m, _ = carry
    new = m
    for _ in range(8):
      new = new | (dilate(new) & passable)
    return new, (new != m).any()

  expanded, _ = jax.lax.while_loop(lambda c: c[1], body, (start, jnp.bool_(True)))
  return ~(objects & ~dilate(expanded)).any()
