"""Batched auto-reset for gymnax-interface envs that does not run `reset_env` on every step.

`env.step` (gymnax semantics) computes a fresh reset for every env on every step and selects it
where the episode ended; under `vmap` that is B level generations per step. `VmapAutoReset`
instead keeps a pool of P pre-drawn reset states. An env whose episode ends restarts from a pool
entry chosen uniformly at random, and only `refresh_per_step` pool entries are redrawn per step,
and only on steps where some episode ended (`lax.cond` at batch level, so the reset work really is
skipped). Every state still comes from `reset_env`, so the start distribution is the env's own;
the cost is that envs finishing close together may share a start state (pool reuse).

Shapes: observations, states and per-env outputs carry a leading batch axis [B]; the pool carries
[P]. All randomness comes from the keys passed in.
"""
import functools
from typing import Any

import jax
import jax.numpy as jnp
from flax import struct


@struct.dataclass
class AutoResetState:
  env_state: Any  # [B] batched inner states
  pool_obs: Any  # [P] pre-drawn reset observations
  pool_state: Any  # [P] pre-drawn reset states
  next_slot: jax.Array  # int32 [], pool row refreshed next


def _select(mask, on_true, on_false):
  """Per-env select over pytrees whose leaves have a leading [B] axis."""
  def pick(a, b):
    return jnp.where(mask.reshape(mask.shape + (1,) * (a.ndim - 1)), a, b)
  return jax.tree.map(pick, on_true, on_false)


class VmapAutoReset:
  """Runs `num_envs` copies of `env` with pooled auto-reset; same return layout as gymnax `step`."""

  def __init__(self, env, num_envs: int, pool_size: int | None = None, refresh_per_step: int = 1):
    if num_envs < 1:
      raise ValueError(f"num_envs must be >= 1, got {num_envs}")
    self.env = env
    self.num_envs = num_envs
    self.pool_size = pool_size or num_envs
    if not 1 <= refresh_per_step <= self.pool_size:
      raise ValueError(f"refresh_per_step must be in [1, pool_size={self.pool_size}]")
    self.refresh_per_step = refresh_per_step

  @property
  def default_params(self):
    return self.env.default_params

  @functools.partial(jax.jit, static_argnums=0)
  def reset(self, key: jax.Array, params=None):
    """Returns (obs [B], AutoResetState)."""
    params = self.env.default_params if params is None else params
    key_envs, key_pool = jax.random.split(key)
    reset = jax.vmap(self.env.reset_env, in_axes=(0, None))
    obs, env_state = reset(jax.random.split(key_envs, self.num_envs), params)
    pool_obs, pool_state = reset(jax.random.split(key_pool, self.pool_size), params)
    return obs, AutoResetState(env_state, pool_obs, pool_state, jnp.zeros((), jnp.int32))

  @functools.partial(jax.jit, static_argnums=0)
  def step(self, key: jax.Array, state: AutoResetState, action: jax.Array, params=None):
    """Returns (obs, state, reward, terminated, truncated, info), each per env [B]."""
    params = self.env.default_params if params is None else params
    key_step, key_pick, key_refresh = jax.random.split(key, 3)
    step = jax.vmap(self.env.step_env, in_axes=(0, 0, 0, None))
    obs, env_state, reward, terminated, info = step(
        jax.random.split(key_step, self.num_envs), state.env_state, action, params)
    truncated = jax.vmap(self.env.is_truncated, in_axes=(0, None))(env_state, params)
    done = terminated | truncated
    pick = jax.random.randint(key_pick, (self.num_envs,), 0, self.pool_size)
    take = lambda tree: jax.tree.map(lambda x: x[pick], tree)
    new_obs = _select(done, take(state.pool_obs), obs)
    new_env_state = _select(done, take(state.pool_state), env_state)
    pool_obs, pool_state, next_slot = jax.lax.cond(
        jnp.any(done), self._refresh, lambda *a: a[:3],
        state.pool_obs, state.pool_state, state.next_slot, key_refresh, params)
    info = {**info, "terminated": terminated, "truncated": truncated, "final_observation": obs}
    new_state = AutoResetState(new_env_state, pool_obs, pool_state, next_slot)
    return new_obs, new_state, reward, terminated, truncated, info

  def _refresh(self, pool_obs, pool_state, next_slot, key, params):
    rows = (next_slot + jnp.arange(self.refresh_per_step)) % self.pool_size
    obs, st = jax.vmap(self.env.reset_env, in_axes=(0, None))(
        jax.random.split(key, self.refresh_per_step), params)
    put = lambda pool, new: jax.tree.map(lambda p, n: p.at[rows].set(n), pool, new)
    return put(pool_obs, obs), put(pool_state, st), (next_slot + self.refresh_per_step) % self.pool_size
