"""Decoder for Procgen's serialized game state (`callmethod("get_state")`), read-only.

The byte layout follows procgen 0.10.7's C++ `Game::serialize` then
`BasicAbstractGame::serialize` (little-endian int32/float32; strings and vectors are an int32
length followed by the items); all six ConPAct games derive from BasicAbstractGame. Game-specific
fields that follow are decoded only for chaser (its enemy-vulnerability timer). The decoder checks
itself: the game name must match, the grid must have w*h cells and exactly one PLAYER entity.
Coordinates are Procgen's: x grows to the right, y grows upward, one unit per grid cell.
"""
import dataclasses
import struct

import numpy as np

_ENTITY_FIELDS = (("x", "f"), ("y", "f"), ("vx", "f"), ("vy", "f"), ("rx", "f"), ("ry", "f"),
                  ("type", "i"), ("image_type", "i"), ("image_theme", "i"), ("render_z", "i"),
                  ("will_erase", "i"), ("collides_with_entities", "i"), ("collision_margin", "f"),
                  ("rotation", "f"), ("vrot", "f"), ("is_reflected", "i"), ("fire_time", "i"),
                  ("spawn_time", "i"), ("life_time", "i"), ("expire_time", "i"),
                  ("use_abs_coords", "i"), ("friction", "f"), ("smart_step", "i"),
                  ("avoids_collisions", "i"), ("auto_erase", "i"), ("alpha", "f"), ("health", "f"),
                  ("theta", "f"), ("grow_rate", "f"), ("alpha_decay", "f"), ("climber_spawn_x", "f"))
PLAYER = 0
SPACE = 100


class _Reader:
  def __init__(self, data: bytes):
    self.data, self.pos = data, 0

  def _take(self, fmt: str):
    (value,) = struct.unpack_from("<" + fmt, self.data, self.pos)
    self.pos += 4
    return value

  def int(self) -> int:
    return self._take("i")

  def float(self) -> float:
    return self._take("f")

  def string(self) -> bytes:
    n = self.int()
    out = self.data[self.pos:self.pos + n]
    self.pos += n
    return out

  def ints(self, n: int) -> list[int]:
    return [self.int() for _ in range(n)]

  def vector_int(self) -> np.ndarray:
    n = self.int()
    out = np.frombuffer(self.data, "<i4", n, self.pos).copy()
    self.pos += 4 * n
    return out


@dataclasses.dataclass
class ProcgenState:
  game: str
  cur_time: int
  timeout: int
  level_seed: int
  entities: list[dict]  # one dict per entity, keys from _ENTITY_FIELDS
  grid: np.ndarray  # int32 [H, W], grid[y, x], y upward
  center: tuple[float, float]  # centre of the rendered view
  view_dim: float  # side of the rendered square view, in cells
  extra: dict  # game-specific fields we decode

  @property
  def agent(self) -> dict:
    return next(e for e in self.entities if e["type"] == PLAYER)

  def visible(self, x: float, y: float) -> bool:
    half = self.view_dim / 2
    return abs(x - self.center[0]) <= half and abs(y - self.center[1]) <= half


def _skip_randgen(r: _Reader) -> None:
  r.int()  # is_seeded
  r.string()  # std::mt19937 state as text


def parse_state(blob: bytes, expected_game: str | None = None) -> ProcgenState:
  r = _Reader(bytes(blob))
  if r.int() != 0:
    raise ValueError("unsupported Procgen serialize version")
  game = r.string().decode()
  if expected_game is not None and game != expected_game:
    raise ValueError(f"state is for {game!r}, expected {expected_game!r}")
  r.ints(12)  # options
  r.ints(5)  # grid_step, level_seed_low/high, game_type, game_n
  _skip_randgen(r)
  _skip_randgen(r)
  r.float(), r.int(), r.int()  # step_data reward, done, level_complete
  r.int()  # action
  timeout = r.int()  # the game's own episode length limit
  level_seed = r.int()
  r.ints(3)  # prev_level_seed, episodes_remaining, episode_done
  r.int(), r.float(), r.int(), r.int()  # last_reward_timer, last_reward, default_action, fixed_asset_seed
  cur_time = r.int()
  r.int()  # is_waiting_for_step
  r.int()  # grid_size
  entities = []
  for _ in range(r.int()):
    entities.append({name: (r.int() if kind == "i" else r.float()) for name, kind in _ENTITY_FIELDS})
  r.int(), r.int(), r.float(), r.float()  # background fields
  r.float()  # char_dim
  r.ints(3)  # last_move_action, move_action, special_action
  [r.float() for _ in range(6)]  # mixrate, maxspeed, max_jump, action_vx/vy/vrot
  center = (r.float(), r.float())
  r.ints(3)  # random_agent_start, has_useful_vel_info, step_rand_int
  _skip_randgen(r)
  width, height = r.int(), r.int()
  r.int()  # out_of_bounds_object
  _, view_dim = r.float(), r.float()
  [r.float() for _ in range(4)]  # x_off, y_off, visibility, min_visibility
  gw, gh = r.int(), r.int()
  cells = r.vector_int()
  if (gw, gh) != (width, height) or cells.size != gw * gh:
    raise ValueError(f"grid {gw}x{gh} with {cells.size} cells does not match main area {width}x{height}")
  if sum(e["type"] == PLAYER for e in entities) != 1:
    raise ValueError("decoded state does not hold exactly one player entity")
  extra = {}
  if game == "chaser":
    r.vector_int()  # free_cells
    r.vector_int()  # is_space_vec (bools are written as ints)
    extra = dict(zip(("eat_timeout", "egg_timeout", "eat_time", "total_enemies", "total_orbs",
                      "orbs_collected"), r.ints(6)))
  return ProcgenState(game, cur_time, timeout, level_seed, entities, cells.reshape(gh, gw), center, view_dim, extra)
