"""Every JAX env is a gymnax `Environment` with gymnax spaces, so gymnax's own wrappers work on it:
LogWrapper, FlattenObservationWrapper (incl. its observation_space), StickyActionWrapper and
GymnaxToGymWrapper. Every env's spaces go through every wrapper; stepping through the wrappers runs
on Sokoban and one BabyAI task (all BabyAI tasks share one class, and compiling each task's
generator under four wrappers would take minutes on CPU)."""
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from gymnax.environments import environment, spaces
from gymnax.wrappers import purerl
from gymnax.wrappers.gym import GymnaxToGymWrapper

import envs
from envs import base
from envs.minigrid import tasks
from envs.sokoban import env as sk
from envs.sokoban import generator


@functools.cache
def _sokoban():
  return sk.Sokoban(generator.generate_levels(seed=5, num_levels=4, height=7, width=7,
                                              num_boxes=2), 5)


JAX_ENV_IDS = ["Sokoban-v0", *sorted(spec.env_id for spec in tasks.TASKS.values())]
STEPPED_ENV_IDS = ["Sokoban-v0", "BabyAI-GoToDoor-v0"]


def _make(env_id):
  return _sokoban() if env_id == "Sokoban-v0" else envs.make(env_id)


def test_base_is_gymnax():
  assert base.Environment is environment.Environment
  assert (base.Discrete, base.Box, base.Dict) == (spaces.Discrete, spaces.Box, spaces.Dict)


@pytest.mark.parametrize("env_id", JAX_ENV_IDS)
def test_gymnax_wrappers_accept_the_spaces(env_id):
  env = _make(env_id)
  assert isinstance(env, environment.Environment)
  params = env.default_params
  assert isinstance(env.action_space(params), spaces.Discrete)
  obs_space = env.observation_space(params)
  assert isinstance(obs_space, spaces.Box)
  flat_space = purerl.FlattenObservationWrapper(env).observation_space(params)
  assert tuple(flat_space.shape) == (int(np.prod(obs_space.shape)),)
  assert flat_space.dtype == obs_space.dtype
  purerl.StickyActionWrapper(env, sticky_action_prob=0.1)  # raises on a non-Discrete space
  gym_action = spaces.gymnax_space_to_gym_space(env.action_space(params))
  gym_obs = spaces.gymnax_space_to_gym_space(obs_space)
  assert gym_action.n == env.num_actions and gym_obs.shape == tuple(obs_space.shape)


@pytest.mark.parametrize("env_id", STEPPED_ENV_IDS)
def test_gymnax_wrappers_step(env_id):
  env = _make(env_id)
  params = env.default_params
  obs_space = env.observation_space(params)
  key = jax.random.key(0)

  logged = purerl.LogWrapper(env)
  obs, state = logged.reset(key, params)
  obs, state, reward, terminated, truncated, info = logged.step(key, state, 0, params)
  assert obs.shape == tuple(obs_space.shape) and "returned_episode_returns" in info
  np.testing.assert_allclose(state.episode_returns, reward)

  flat = purerl.FlattenObservationWrapper(env)
  flat_space = flat.observation_space(params)
  assert isinstance(flat_space, spaces.Box)
  assert tuple(flat_space.shape) == (int(np.prod(obs_space.shape)),)
  obs, state = flat.reset(key, params)
  assert obs.shape == tuple(flat_space.shape) and bool(flat_space.contains(obs))
  obs, *_ = flat.step(key, state, 1, params)
  assert obs.shape == tuple(flat_space.shape)

  sticky = purerl.StickyActionWrapper(env, sticky_action_prob=0.5)
  obs, state = sticky.reset(key, params)
  obs, state, *_ = sticky.step(key, state, jnp.int32(1), params)
  assert obs.shape == tuple(obs_space.shape)

  gym_env = GymnaxToGymWrapper(env, params, seed=0)
  assert gym_env.action_space.n == env.num_actions
  assert gym_env.observation_space.shape == tuple(obs_space.shape)
  obs, _ = gym_env.reset(seed=1)
  obs, reward, terminated, truncated, _ = gym_env.step(0)
  assert np.asarray(obs).shape == tuple(obs_space.shape)


def test_step_and_reset_stay_pure_and_key_first():
  env = _sokoban()
  params = env.default_params
  _, s1 = env.reset(jax.random.key(3), params)
  _, s2 = env.reset(jax.random.key(3), params)
  jax.tree.map(np.testing.assert_array_equal, s1, s2)
  out1 = env.step(jax.random.key(4), s1, 2, params)
  out2 = env.step(jax.random.key(4), s1, 2, params)
  jax.tree.map(np.testing.assert_array_equal, out1, out2)
  jax.tree.map(np.testing.assert_array_equal, s1, s2)  # the input state is untouched
