"""JAX-native Sokoban (gymnax interface) over a bank of levels.

Why ours rather than jumanji's `Sokoban`: jumanji's env speaks the dm_env `TimeStep` protocol
(`reset(key) -> (state, timestep)`, no params, no terminated/truncated split), is fixed to 10x10
boards and draws levels from a generator that by default downloads the Boxoban set. Our agents and
wrappers use the gymnax interface with terminated/truncated, the ConPAct splits need other board
sizes, and levels must come from an offline bank (generator cache, Boxoban files, ASCII fixtures).
The rules and reward constants are the same, and `experiments/bench/envs.py` measures both at batch
1024 in one run (see README for the figures).

Rules: actions 0..3 = up, down, left, right. Moving into a wall is a no-op; moving into a box pushes
it if the cell behind it is free (not a wall, not a box), otherwise no-op. Reward per step:
-0.1, +1 per box pushed onto a target, -1 per box pushed off one, +10 when every box is on a target
(the episode then terminates). Truncation at `max_steps_in_episode` (gymnax time limit).

Shapes: levels int8 [N, H, W] (codes in `levels.py`); state grids bool [H, W]; player int32 [2]
as (row, col); observation int8 [H, W] with the same cell codes.
"""
import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from envs import base
from envs.sokoban import generator
from envs.sokoban import levels as lv

ACTION_NAMES = ("up", "down", "left", "right")
DELTAS = np.array([[-1, 0], [1, 0], [0, -1], [0, 1]], np.int32)


@struct.dataclass
class SokobanState:
  walls: jax.Array  # bool [H, W]
  targets: jax.Array  # bool [H, W]
  boxes: jax.Array  # bool [H, W]
  player: jax.Array  # int32 [2], (row, col)
  time: jax.Array  # int32 []
  level_index: jax.Array  # int32 [], row of the level bank (-1 for a level given directly)


@struct.dataclass
class SokobanParams:
  levels: jax.Array  # int8 [N, H, W]
  max_steps_in_episode: int = 120
  step_reward: float = -0.1
  box_on_target_reward: float = 1.0
  box_off_target_reward: float = -1.0
  solved_reward: float = 10.0


def state_from_level(level: jax.Array, level_index=-1) -> SokobanState:
  """Decodes an int8 [H, W] level into a start state (jit-able)."""
  level = jnp.asarray(level)
  flat_player = jnp.argmax(((level == lv.PLAYER) | (level == lv.PLAYER_ON_TARGET)).ravel())
  return SokobanState(
      walls=level == lv.WALL,
      targets=(level == lv.TARGET) | (level == lv.BOX_ON_TARGET) | (level == lv.PLAYER_ON_TARGET),
      boxes=(level == lv.BOX) | (level == lv.BOX_ON_TARGET),
      player=jnp.stack(jnp.unravel_index(flat_player, level.shape)).astype(jnp.int32),
      time=jnp.zeros((), jnp.int32),
      level_index=jnp.asarray(level_index, jnp.int32))


def board(state: SokobanState) -> jax.Array:
  """Cell codes int8 [H, W] of a state (the observation)."""
  grid = jnp.where(state.walls, lv.WALL, lv.FLOOR)
  grid = jnp.where(state.targets, lv.TARGET, grid)
  grid = jnp.where(state.boxes, jnp.where(state.targets, lv.BOX_ON_TARGET, lv.BOX), grid)
  here = jnp.where(state.targets[state.player[0], state.player[1]], lv.PLAYER_ON_TARGET, lv.PLAYER)
  return grid.at[state.player[0], state.player[1]].set(here).astype(jnp.int8)


def _cell(grid: jax.Array, pos: jax.Array, outside: bool) -> jax.Array:
  h, w = grid.shape
  inside = (pos[0] >= 0) & (pos[0] < h) & (pos[1] >= 0) & (pos[1] < w)
  return jnp.where(inside, grid[jnp.clip(pos[0], 0, h - 1), jnp.clip(pos[1], 0, w - 1)], outside)


def move(state: SokobanState, action: jax.Array):
  """The rule core: returns (next state without time update, pushed, box_from, box_to)."""
  delta = jnp.asarray(DELTAS)[action]
  one, two = state.player + delta, state.player + 2 * delta
  box_ahead = _cell(state.boxes, one, False)
  behind_free = ~_cell(state.walls, two, True) & ~_cell(state.boxes, two, True)
  pushed = box_ahead & behind_free
  moved = ~_cell(state.walls, one, True) & (~box_ahead | pushed)
  h, w = state.boxes.shape
  one_c = (jnp.clip(one[0], 0, h - 1), jnp.clip(one[1], 0, w - 1))
  two_c = (jnp.clip(two[0], 0, h - 1), jnp.clip(two[1], 0, w - 1))
  pushed_boxes = state.boxes.at[one_c].set(False).at[two_c].set(True)
  boxes = jnp.where(pushed, pushed_boxes, state.boxes)
  player = jnp.where(moved, one, state.player).astype(jnp.int32)
  return state.replace(boxes=boxes, player=player), pushed, one_c, two_c


class Sokoban(base.Environment[SokobanState, SokobanParams]):
  """Sokoban over a level bank; `reset` draws a bank row uniformly."""

  def __init__(self, levels: np.ndarray, max_steps_in_episode: int = 120):
    levels = np.asarray(levels, np.int8)
    if levels.ndim != 3:
      raise ValueError(f"levels must be int8 [N, H, W], got shape {levels.shape}")
    for level in levels:
      lv.check_level(level)
    self.levels = levels
    self.max_steps_in_episode = max_steps_in_episode

  @property
  def default_params(self) -> SokobanParams:
    return SokobanParams(levels=jnp.asarray(self.levels), max_steps_in_episode=self.max_steps_in_episode)

  def reset_env(self, key, params):
    index = jax.random.randint(key, (), 0, params.levels.shape[0])
    state = state_from_level(params.levels[index], index)
    return self.get_obs(state), state

  def step_env(self, key, state, action, params):
    del key
    was_solved = self.is_terminated(state, params)
    nxt, pushed, box_from, box_to = move(state, action)
    placed = (state.targets[box_to].astype(jnp.float32) - state.targets[box_from].astype(jnp.float32))
    box_reward = jnp.where(placed > 0, params.box_on_target_reward,
                           jnp.where(placed < 0, params.box_off_target_reward, 0.0))
    solved = self.is_terminated(nxt, params)
    reward = (params.step_reward + jnp.where(pushed, box_reward, 0.0)
              + jnp.where(solved & ~was_solved, params.solved_reward, 0.0))
    nxt = nxt.replace(time=state.time + 1)
    info = {"solved": solved, "boxes_on_target": jnp.sum(nxt.boxes & nxt.targets)}
    return self.get_obs(nxt), nxt, reward.astype(jnp.float32), solved, info

  def get_obs(self, state, params=None, key=None):
    return board(state)

  def is_terminated(self, state, params):
    return ~jnp.any(state.boxes & ~state.targets)

  @property
  def name(self) -> str:
    return "Sokoban-v0"

  @property
  def num_actions(self) -> int:
    return len(ACTION_NAMES)

  def action_space(self, params=None):
    return base.Discrete(len(ACTION_NAMES))

  def observation_space(self, params=None):
    return base.Box(0, lv.NUM_CODES - 1, self.levels.shape[1:], jnp.int8)

  def state_space(self, params=None):
    h, w = self.levels.shape[1:]
    return base.Dict({
        "walls": base.Box(0, 1, (h, w), jnp.bool_), "targets": base.Box(0, 1, (h, w), jnp.bool_),
        "boxes": base.Box(0, 1, (h, w), jnp.bool_), "player": base.Box(0, max(h, w) - 1, (2,), jnp.int32),
        "time": base.Discrete(self.max_steps_in_episode + 1),
        "level_index": base.Box(-1, len(self.levels) - 1, (), jnp.int32)})


def make_sokoban(levels: np.ndarray | None = None, boxoban_dir: str | None = None,
                 height: int = 10, width: int = 10, num_boxes: int = 4, num_levels: int = 256,
                 seed: int = 0, max_steps_in_episode: int = 120) -> Sokoban:
  """Registry factory: a given bank, a Boxoban directory/file, or `num_levels` generated levels."""
  if levels is not None and boxoban_dir is not None:
    raise ValueError("pass either levels or boxoban_dir, not both")
  if boxoban_dir is not None:
    levels = lv.load_boxoban(boxoban_dir)[1]
  elif levels is None:
    levels = generator.generate_levels(seed, num_levels, height, width, num_boxes)
  return Sokoban(levels, max_steps_in_episode)
