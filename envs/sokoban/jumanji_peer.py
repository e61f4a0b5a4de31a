"""Our level banks inside jumanji's Sokoban, for the equivalence test and the speed benchmark.

jumanji splits a board into a fixed grid (0 empty, 1 wall, 2 target) and a variable grid (3 agent,
4 box), orders its actions up, right, down, left, and is fixed to 10x10 boards with 4 boxes.
"""
import jax
import jax.numpy as jnp
import numpy as np

from envs.sokoban import levels as lv

# our action index (up, down, left, right) -> jumanji's (up, right, down, left)
OUR_TO_JUMANJI_ACTION = np.array([0, 2, 3, 1], np.int32)


def split_grids(levels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
  """int8 [..., H, W] levels -> jumanji (fixed_grid, variable_grid), uint8 each."""
  levels = np.asarray(levels)
  fixed = np.where(levels == lv.WALL, 1, 0)
  fixed = np.where(np.isin(levels, (lv.TARGET, lv.BOX_ON_TARGET, lv.PLAYER_ON_TARGET)), 2, fixed)
  variable = np.where(np.isin(levels, (lv.PLAYER, lv.PLAYER_ON_TARGET)), 3, 0)
  variable = np.where(np.isin(levels, (lv.BOX, lv.BOX_ON_TARGET)), 4, variable)
  return fixed.astype(np.uint8), variable.astype(np.uint8)


def make_bank_generator(levels: np.ndarray):
  """A jumanji `Generator` drawing uniformly from an int8 [N, 10, 10] bank of 4-box levels."""
  # jumanji is an optional peer (the `test` extra); only the equivalence test and benchmark use it
  from jumanji.environments.routing.sokoban import generator as jg
  from jumanji.environments.routing.sokoban.types import State  # optional peer, as above

  fixed, variable = (jnp.asarray(g) for g in split_grids(levels))

  class BankGenerator(jg.Generator):
    def __init__(self):  # the base class would read dataset options we do not use
      pass

    def __call__(self, rng_key):
      key, idx_key = jax.random.split(rng_key)
      i = jax.random.randint(idx_key, (), 0, fixed.shape[0])
      return State(key=key, fixed_grid=fixed[i], variable_grid=variable[i],
                   agent_location=self.get_agent_coordinates(variable[i]),
                   step_count=jnp.array(0, jnp.int32))

  return BankGenerator()
