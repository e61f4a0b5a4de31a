"""The gymnax `Environment` interface, mirrored so JAX envs work with gymnax-style code unchanged.

This follows gymnax 1.0.1 (`gymnax.environments.environment.Environment`) method by method:
pure key-first `reset(key, params)` / `step(key, state, action, params)`, `flax.struct` state and
params, and `step` returning `(obs, state, reward, terminated, truncated, info)` with an auto-reset
on `terminated | truncated`. We mirror rather than subclass because importing `gymnax` pulls in all
its bundled environments (and their optional dependencies, e.g. `six` for the MNIST bandit), which
grid envs do not need; `tests/envs/test_env_base.py` checks the signatures stay identical.

Subclasses implement `step_env`, `reset_env`, `get_obs`, `is_terminated`, the spaces and
`default_params`; truncation is `state.time >= params.max_steps_in_episode` as in gymnax.
For batched training use `envs.wrappers.VmapAutoReset`, which calls `step_env` and replaces
finished episodes from a pre-drawn pool instead of running `reset_env` on every step.
"""
from functools import partial
from typing import Any, Generic, TypeVar

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

TEnvState = TypeVar("TEnvState", bound="EnvState")
TEnvParams = TypeVar("TEnvParams", bound="EnvParams")


@struct.dataclass
class EnvState:
  time: int


@struct.dataclass
class EnvParams:
  max_steps_in_episode: int = 1


class Environment(Generic[TEnvState, TEnvParams]):
  """Abstract JAX environment with the gymnax method set and return conventions."""

  @property
  def default_params(self) -> EnvParams:
    return EnvParams()

  @partial(jax.jit, static_argnames=("self",))
  def step(self, key: jax.Array, state: TEnvState, action: int | jax.Array,
           params: TEnvParams | None = None):
    """One transition; a finished episode is replaced by `reset_env` (gymnax semantics).

    Returns (obs, state, reward, terminated, truncated, info); `info["final_observation"]` is the
    observation of the finished episode's last state when it auto-resets.
    """
    if params is None:
      params = self.default_params
    key_step, key_reset = jax.random.split(key)
    obs_st, state_st, reward, terminated, info = self.step_env(key_step, state, action, params)
    truncated = self.is_truncated(state_st, params)
    done = jnp.logical_or(terminated, truncated)
    obs_re, state_re = self.reset_env(key_reset, params)
    state = jax.tree.map(lambda x, y: jax.lax.select(done, x, y), state_re, state_st)
    obs = jax.tree.map(lambda x, y: jax.lax.select(done, x, y), obs_re, obs_st)
    info = {**info, "terminated": terminated, "truncated": truncated, "final_observation": obs_st}
    return obs, state, reward, terminated, truncated, info

  @partial(jax.jit, static_argnames=("self",))
  def reset(self, key: jax.Array, params: TEnvParams | None = None):
    if params is None:
      params = self.default_params
    return self.reset_env(key, params)

  def step_env(self, key: jax.Array, state: TEnvState, action: int | jax.Array, params: TEnvParams):
    """Environment-specific transition: (obs, state, reward, terminated, info)."""
    raise NotImplementedError

  def reset_env(self, key: jax.Array, params: TEnvParams):
    """Environment-specific reset: (obs, state)."""
    raise NotImplementedError

  def observe(self, key: jax.Array, state: TEnvState, action, params: TEnvParams) -> Any:
    del action
    return self.get_obs(state, params=params, key=key)

  def get_obs(self, state, params=None, key=None) -> Any:
    raise NotImplementedError

  def is_truncated(self, state: TEnvState, params: TEnvParams) -> jax.Array:
    return state.time >= params.max_steps_in_episode

  def is_terminal(self, state: TEnvState, params: TEnvParams) -> jax.Array:
    return self.is_terminated(state, params)

  def is_terminated(self, state: TEnvState, params: TEnvParams) -> jax.Array:
    raise NotImplementedError

  def discount(self, state: TEnvState, params: TEnvParams) -> jax.Array:
    return jax.lax.select(self.is_terminated(state, params), 0.0, 1.0)

  @property
  def name(self) -> str:
    return type(self).__name__

  @property
  def num_actions(self) -> int:
    raise NotImplementedError

  def action_space(self, params: TEnvParams):
    raise NotImplementedError

  def observation_space(self, params: TEnvParams):
    raise NotImplementedError

  def state_space(self, params: TEnvParams):
    raise NotImplementedError


class Discrete:
  """Integer actions 0..n-1 (gymnax `spaces.Discrete`)."""

  def __init__(self, num_categories: int, dtype=jnp.int32):
    if num_categories < 0:
      raise ValueError(f"num_categories must be >= 0, got {num_categories}")
    self.n = num_categories
    self.shape = ()
    self.dtype = jnp.dtype(dtype)

  def __repr__(self) -> str:
    return f"Discrete({self.n}, dtype={self.dtype.name})"

  def sample(self, key: jax.Array) -> jax.Array:
    return jax.random.randint(key, self.shape, 0, self.n, dtype=self.dtype)

  def contains(self, x) -> jax.Array:
    x = jnp.asarray(x)
    return jnp.logical_and(x >= 0, x < self.n)


class Box:
  """Array-shaped space with elementwise bounds (gymnax `spaces.Box`)."""

  def __init__(self, low, high, shape: tuple[int, ...], dtype=jnp.float32):
    self.low, self.high, self.shape, self.dtype = low, high, tuple(shape), jnp.dtype(dtype)

  def __repr__(self) -> str:
    return f"Box(low={np.min(self.low)}, high={np.max(self.high)}, shape={self.shape}, dtype={self.dtype.name})"

  def sample(self, key: jax.Array) -> jax.Array:
    if jnp.issubdtype(self.dtype, jnp.integer):
      return jax.random.randint(key, self.shape, self.low, jnp.asarray(self.high) + 1).astype(self.dtype)
    return jax.random.uniform(key, self.shape, minval=self.low, maxval=self.high).astype(self.dtype)

  def contains(self, x) -> jax.Array:
    x = jnp.asarray(x)
    return jnp.logical_and(jnp.all(x >= self.low), jnp.all(x <= self.high))


class Dict:
  """Named sub-spaces (gymnax `spaces.Dict`); `contains` reads fields by attribute."""

  def __init__(self, spaces: dict[str, Any]):
    self.spaces = spaces
    self.num_spaces = len(spaces)

  def __repr__(self) -> str:
    return f"Dict({self.spaces!r})"

  def sample(self, key: jax.Array) -> dict[str, jax.Array]:
    keys = jax.random.split(key, self.num_spaces)
    return {k: s.sample(keys[i]) for i, (k, s) in enumerate(self.spaces.items())}

  def contains(self, x) -> jax.Array:
    ok = [s.contains(x[k] if isinstance(x, dict) else getattr(x, k)) for k, s in self.spaces.items()]
    return jnp.all(jnp.stack(ok))
