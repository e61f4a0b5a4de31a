"""BabyAI env contract: jit once, same key -> same trajectory, random-episode smoke through the
pooled auto-reset wrapper, the registry, and a fixed hand-built level exercising every rule."""
import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
from envs import registry
from envs.minigrid import constants as C
from envs.minigrid import core
from envs.minigrid.env import BabyAIEnv
from envs.minigrid.tasks import TASKS
from envs.wrappers import VmapAutoReset


def _rollout(env, key, steps):
  """Random actions through gymnax-style `env.step` (auto-reset), returns stacked outputs."""
  params = env.default_params
  key, k0 = jax.random.split(key)
  _, state = env.reset(k0, params)

  def body(state, k):
    k_act, k_step = jax.random.split(k)
    action = jax.random.randint(k_act, (), 0, env.num_actions)
    obs, state, reward, term, trunc, _ = env.step(k_step, state, action, params)
    return state, (obs, state.agent_pos, state.agent_dir, reward, term, trunc)

  return jax.lax.scan(body, state, jax.random.split(key, steps))[1]


def test_registry_builds_every_task():
  for task in TASKS:
    assert task in registry.registered_ids()
    env = registry.make(task)
    assert isinstance(env, BabyAIEnv) and env.name == task
    assert env.default_params.max_steps_in_episode == TASKS[task].max_steps


def test_step_and_reset_compile_once():
  env = BabyAIEnv("BabyAI-GoToObj-v0")
  params = env.default_params

  @jax.jit
  @chex.assert_max_traces(n=1)
  def step(key, state, action):
    return env.step(key, state, action, params)

  @jax.jit
  @chex.assert_max_traces(n=1)
  def reset(key):
    return env.reset(key, params)

  for seed in range(3):
    _, state = reset(jax.random.key(seed))
    for a in range(7):
      _, state, *_ = step(jax.random.key(a), state, jnp.int32(a))
  chex.clear_trace_counter()


def test_same_key_same_trajectory():
  env = BabyAIEnv("BabyAI-GoToObj-v0")
  run = jax.jit(lambda k: _rollout(env, k, 80))
  a, b, c = run(jax.random.key(5)), run(jax.random.key(5)), run(jax.random.key(6))
  chex.assert_trees_all_equal(a, b)
  assert not all(np.array_equal(x, y) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(c)))


# Every task: small batch and few steps keep each compile + run to seconds. max_restarts=2: steps
# with one or two ended episodes take the wrapper's row-copy path, more take the full select
# (tests/envs/test_env_wrappers.py checks that both paths agree).
@pytest.mark.parametrize("task", sorted(TASKS))
def test_random_episodes_through_autoreset(task):
  env = envs.make(task)
  batch, steps = 16, 40
  wrapper = VmapAutoReset(env, batch, pool_size=8, max_restarts=2)
  params = env.default_params

  def run(key):
    obs, state = wrapper.reset(key, params)

    def body(state, k):
      k_act, k_step = jax.random.split(k)
      action = jax.random.randint(k_act, (batch,), 0, env.num_actions)
      prev = state
      obs, state, reward, term, trunc, info = wrapper.step(k_step, state, action, params)
      s = state.env_state
      under = s.grid[jnp.arange(batch), s.agent_pos[:, 0], s.agent_pos[:, 1]]
      # is_terminated reads termination off the final state; compare before the auto-reset
      final = jax.vmap(env.step_env, in_axes=(0, 0, 0, None))(
          jax.random.split(k_step, batch), prev.env_state, action, params)[1]
      term_from_state = jax.vmap(env.is_terminated, in_axes=(0, None))(final, params)
      return state, (obs, reward, term, trunc, info["success"], core.can_overlap(under), s.time,
                     term_from_state)

    return obs, jax.lax.scan(body, state, jax.random.split(key, steps))[1]

  obs0, (obs, reward, term, trunc, success, on_free_cell, time, term_from_state) = jax.device_get(
      jax.jit(run)(jax.random.key(0)))
  assert obs0.shape == (batch, 7, 7, 3) and obs.shape == (steps, batch, 7, 7, 3)
  assert obs.dtype == np.uint8 and bool(env.observation_space(params).contains(obs[0, 0]))
  assert (obs[..., 0] <= C.OBJ["agent"]).all() and (obs[..., 1] < C.N_COLORS).all()
  assert (obs[..., 2] <= C.DOOR_LOCKED).all()
  assert np.isfinite(reward).all() and (reward >= 0).all() and (reward <= 1).all()
  np.testing.assert_array_equal(reward > 0, success)    # only success is rewarded here
  assert (~success | term).all()
  np.testing.assert_array_equal(term, term_from_state)
  assert on_free_cell.all()                               # never inside a wall or object
  assert (time <= params.max_steps_in_episode).all()
  assert env.action_space(params).n == 7


def fixed_level():
  """7x5 room: agent (1,1) facing east; red ball (3,1); blue key (1,2);
  locked blue door (4,3); closed green door (5,1); purple box (2,3). Mission: go to the red ball.

      #######
      #>.b.D#      D = closed green door at (5,1)
      #k....#
      #.x.L.#      x = purple box (2,3), L = locked blue door (4,3)
      #######
  """
  grid = np.zeros((7, 5, 3), np.uint8)
  grid[..., 0] = C.EMPTY
  grid[0, :] = grid[-1, :] = grid[:, 0] = grid[:, -1] = (C.WALL, C.GREY, 0)
  grid[3, 1] = (C.BALL, C.COLOR["red"], 0)
  grid[1, 2] = (C.KEY, C.COLOR["blue"], 0)
  grid[4, 3] = (C.DOOR, C.COLOR["blue"], C.DOOR_LOCKED)
  grid[5, 1] = (C.DOOR, C.COLOR["green"], C.DOOR_CLOSED)
  grid[2, 3] = (C.BOX, C.COLOR["purple"], 0)
  mission = jnp.array([C.GOTO, C.BALL, C.COLOR["red"]], jnp.int32)
  target = (grid[..., 0] == C.BALL) & (grid[..., 1] == C.COLOR["red"])
  return core.State(grid=jnp.asarray(grid), agent_pos=jnp.array([1, 1], jnp.int32),
                    agent_dir=jnp.int32(0), carrying=jnp.array([C.EMPTY, 0, 0], jnp.uint8),
                    mission=mission, mission_count=jnp.int32(1), target_mask=jnp.asarray(target),
                    time=jnp.int32(0))


def test_fixed_level_rules():
  env = BabyAIEnv("BabyAI-GoToRedBall-v0")
  params = env.default_params
  step = jax.jit(lambda s, a: env.step_env(jax.random.key(0), s, a, params))
  s = fixed_level()
  L, R, F, P, D, T = C.LEFT, C.RIGHT, C.FORWARD, C.PICKUP, C.DROP, C.TOGGLE

  def act(s, a):
    _, s, reward, term, _ = step(s, jnp.int32(a))
    return s, float(reward), bool(term)

  s, r, t = act(s, R)                        # face south, towards the key
  assert int(s.agent_dir) == 1 and not t
  s, r, t = act(s, F)                        # key blocks the way
  assert tuple(s.agent_pos) == (1, 1)
  s, r, t = act(s, P)                        # pick the key up
  assert tuple(s.carrying) == (C.KEY, C.COLOR["blue"], 0) and s.grid[1, 2, 0] == C.EMPTY
  s, r, t = act(s, P)                        # hands full: nothing happens
  assert tuple(s.carrying) == (C.KEY, C.COLOR["blue"], 0)
  for a in (F, F, L):                        # to (1,3), face east: the purple box
    s, r, t = act(s, a)
  assert tuple(s.agent_pos) == (1, 3) and int(s.agent_dir) == 0
  s, r, t = act(s, D)                        # drop onto the box: not allowed
  assert s.grid[2, 3, 0] == C.BOX and s.carrying[0] == C.KEY
  s, r, t = act(s, T)                        # toggling an empty box removes it
  assert s.grid[2, 3, 0] == C.EMPTY
  s, r, t = act(s, F)
  s, r, t = act(s, T)                        # at (2,3) facing the box cell; now (3,3) empty
  assert tuple(s.agent_pos) == (2, 3)
  s, r, t = act(s, F)                        # (3,3), facing the locked blue door
  s, r, t = act(s, F)
  assert tuple(s.agent_pos) == (3, 3)        # locked doors block
  s, r, t = act(s, T)                        # blue key unlocks and opens it
  assert tuple(s.grid[4, 3]) == (C.DOOR, C.COLOR["blue"], C.DOOR_OPEN)
  s, r, t = act(s, F)
  assert tuple(s.agent_pos) == (4, 3)        # standing in the open doorway
  s, r, t = act(s, L)                        # face north, towards (4,2)
  s, r, t = act(s, D)                        # drop the key on the empty cell
  assert tuple(s.grid[4, 2]) == (C.KEY, C.COLOR["blue"], 0) and s.carrying[0] == C.EMPTY
  s, r, t = act(s, R)
  s, r, t = act(s, F)                        # (5,3), face north: (5,2) then the green door
  s, r, t = act(s, L)
  s, r, t = act(s, F)
  assert tuple(s.agent_pos) == (5, 2) and int(s.agent_dir) == 3
  s, r, t = act(s, T)                        # closed door opens, toggles back shut
  assert s.grid[5, 1, 2] == C.DOOR_OPEN
  s, r, t = act(s, T)
  assert s.grid[5, 1, 2] == C.DOOR_CLOSED
  assert not t and r == 0.0
  s, r, t = act(s, L)                        # face west: (4,2) holds the key; ball not faced
  assert not t
  s, r, t = act(s, R)
  s, r, t = act(s, T)                        # open the green door and stand in it
  s, r, t = act(s, F)
  assert tuple(s.agent_pos) == (5, 1)
  s, r, t = act(s, L)                        # facing west: (4,1), then ball at (3,1)
  s, r, t = act(s, F)                        # at (4,1) facing the red ball: success
  assert t and abs(r - (1 - 0.9 * int(s.time) / 64)) < 1e-6
