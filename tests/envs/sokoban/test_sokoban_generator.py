"""Reverse-play generator and BFS solver, each checked against the JAX env's own rules."""
import jax
import jax.numpy as jnp
import numpy as np

from envs.sokoban import env as sk
from envs.sokoban import generator, solver
from envs.sokoban import levels as lv


_move = jax.jit(lambda state, a: sk.move(state, a)[0])


def _replay(level, actions):
  """Plays `actions` with the JAX env's rules; returns (solved at the end, solved before the end)."""
  state = sk.state_from_level(jnp.asarray(level))
  solved = lambda s: not bool(jnp.any(s.boxes & ~s.targets))
  solved_early = False
  for i, a in enumerate(actions):
    state = _move(state, jnp.int32(a))
    solved_early |= solved(state) and i < len(actions) - 1
  return solved(state), solved_early


def test_solver_known_optimal_lengths():
  # one push right: 1 action
  assert solver.solve(lv.from_ascii("######\n#@$. #\n######")).actions == (3,)
  # walk left twice under the box's row, step up, push left once
  sol = solver.solve(lv.from_ascii("#######\n#.$ ###\n#    @#\n#######"))
  assert sol.solvable and sol.length == 4  # left, left, up, left
  assert _replay(lv.from_ascii("#######\n#.$ ###\n#    @#\n#######"), sol.actions) == (True, False)


def test_solver_detects_unsolvable_and_gives_up():
  assert solver.solve(lv.from_ascii("######\n#$@ .#\n######")).solvable is False  # box against wall
  big = generator.generate_levels(seed=1, num_levels=1, height=10, width=10, num_boxes=4)[0]
  assert solver.solve(big, max_states=50).solvable is None


def test_live_cells_excludes_corners():
  level = lv.from_ascii("#####\n#@  #\n# $ #\n#  .#\n#####")
  live = solver.live_cells(level == lv.WALL, level == lv.TARGET)
  assert not live[1, 1] and not live[1, 3] and live[3, 3] and live[2, 3] and not live[3, 1]


def test_generated_levels_are_solvable_and_optimal_by_replay():
  levels = generator.generate_levels(seed=0, num_levels=12, height=8, width=8, num_boxes=2)
  assert levels.shape == (12, 8, 8) and levels.dtype == np.int8
  assert len({l.tobytes() for l in levels}) == 12
  for level in levels:
    lv.check_level(level)
    assert (level[0] == lv.WALL).all() and (level[:, -1] == lv.WALL).all()  # enclosed room
    sol = solver.solve(level)
    assert sol.solvable is True and sol.length >= 1
    assert _replay(level, sol.actions) == (True, False)
  # most generated boxes start off target (the generator prefers that)
  assert (levels == lv.BOX_ON_TARGET).sum() <= 2


def test_generator_is_deterministic_and_length_filter(tmp_path):
  a = generator.generate_levels(seed=4, num_levels=5, height=7, width=7, num_boxes=2, min_moves=5, max_moves=20)
  b = generator.generate_levels(seed=4, num_levels=5, height=7, width=7, num_boxes=2, min_moves=5, max_moves=20)
  np.testing.assert_array_equal(a, b)
  assert all(5 <= solver.solve(l).length <= 20 for l in a)
  path = str(tmp_path / "bank.npy")
  cached = generator.cached_levels(path, seed=4, num_levels=5, height=7, width=7, num_boxes=2,
                                   min_moves=5, max_moves=20)
  np.testing.assert_array_equal(cached, a)
  np.testing.assert_array_equal(np.load(path), a)
