"""envs.base mirrors gymnax 1.0.1's Environment: same signatures, same step results.

gymnax's `environment.py` is loaded straight from the installed package file, because importing
the `gymnax` package itself also imports its bundled environments and their extra dependencies.
"""
import functools
import importlib.util
import inspect
import os

import jax
import numpy as np

from envs import base
from envs.sokoban import env as sk
from envs.sokoban import generator


def _gymnax_environment_module():
  spec = importlib.util.find_spec("gymnax")
  path = os.path.join(os.path.dirname(spec.origin), "environments", "environment.py")
  module_spec = importlib.util.spec_from_file_location("_gymnax_environment", path)
  module = importlib.util.module_from_spec(module_spec)
  module_spec.loader.exec_module(module)
  return module


def test_method_signatures_match_gymnax():
  gx = _gymnax_environment_module().Environment
  for name in ("step", "reset", "step_env", "reset_env", "get_obs", "observe", "is_truncated",
               "is_terminal", "is_terminated", "discount", "action_space", "observation_space",
               "state_space"):
    ours = inspect.signature(getattr(base.Environment, name))
    theirs = inspect.signature(getattr(gx, name))
    assert list(ours.parameters) == list(theirs.parameters), name
  for name in ("default_params", "name", "num_actions"):
    assert isinstance(getattr(base.Environment, name), property)


def test_gymnax_step_on_our_env_gives_the_same_transition():
  gx = _gymnax_environment_module().Environment
  env = sk.Sokoban(generator.generate_levels(seed=5, num_levels=4, height=7, width=7, num_boxes=2), 5)
  params = env.default_params
  _, state = env.reset(jax.random.key(0), params)
  gymnax_step = jax.jit(functools.partial(gx.step.__wrapped__, env))  # gymnax's own step code
  for t in range(8):
    key, action = jax.random.key(t), t % 4
    ours = env.step(key, state, action, params)
    theirs = gymnax_step(key, state, action, params)
    jax.tree.map(np.testing.assert_array_equal, ours, theirs)
    state = ours[1]
