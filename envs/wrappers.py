"""Batched auto-reset for gymnax-interface envs that does not run `reset_env` on every step.

`env.step` (gymnax semantics) computes a fresh reset for every env on every step and selects it
where the episode ended; under `vmap` that is B level generations per step. `VmapAutoReset`
instead keeps a pool of P pre-drawn reset states. An env whose episode ends restarts from a pool
entry chosen uniformly at random, and only `refresh_per_step` pool entries are redrawn per step,
and only on steps where some episode ended (`lax.cond` at batch level, so the reset work really is
skipped). Every state still comes from `reset_env`, so the start distribution is the env's own;
the cost is that envs finishing close together may share a start state (pool reuse). When few
episodes end on a step (the common case), only their rows are copied from the pool.

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
  """Runs `num_envs` copies of `env` with pooled auto-reset; same return layout as gymnax `step`.

  `max_restarts` (default num_envs // 8) sizes the cheap restart path: when at most that many
  episodes end on a step, only their rows are copied from the pool; otherwise every row is
  selected. Both paths give the same result."""

  def __init__(self, env, num_envs: int, pool_size: int | None = None, refresh_per_step: int = 1,
               max_restarts: int | None = None):
    if num_envs < 1:
      raise ValueError(f"num_envs must be >= 1, got {num_envs}")
    self.env = env
    self.num_envs = num_envs
    self.pool_size = pool_size or num_envs
    if not 1 <= refresh_per_step <= self.pool_size:
      raise ValueError(f"refresh_per_step must be in [1, pool_size={self.pool_size}]")
    self.refresh_per_step = refresh_per_step
    self.max_restarts = max(1, num_envs // 8) if max_restarts is None else max_restarts
    if not 1 <= self.max_restarts <= num_envs:
      raise ValueError(f"max_restarts must be in [1, num_envs={num_envs}]")

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
    # Refresh first, then restart from the refreshed pool: the in-place row write then comes
    # before every read of the pool (written after the restarts' reads, XLA copied the whole
    # pool every step).
    pool, next_slot = self._refresh((state.pool_obs, state.pool_state), state.next_slot,
                                    jnp.any(done), key_refresh, params)
    new_obs, new_env_state = jax.lax.cond(
        done.sum() <= self.max_restarts, self._restart_few, self._restart_all,
        done, pick, pool, (obs, env_state))
    info = {**info, "terminated": terminated, "truncated": truncated, "final_observation": obs}
    new_state = AutoResetState(new_env_state, *pool, next_slot)
    return new_obs, new_state, reward, terminated, truncated, info

  def _restart_all(self, done, pick, pool, current):
    """Env i restarts from pool row pick[i] where done[i]: a full gather and select."""
    return _select(done, jax.tree.map(lambda x: x[pick], pool), current)

  def _restart_few(self, done, pick, pool, current):
    """Same result as `_restart_all` when at most `max_restarts` envs are done: the done envs'
    indices are compacted (rank by an O(B log B) scan: a cumsum lowers to an O(B^2)
    reduce_window on CPU) and only those rows are gathered and written."""
    k, b = self.max_restarts, self.num_envs
    rank = jax.lax.associative_scan(jnp.add, done.astype(jnp.int32)) - 1
    slot = jnp.where(done, rank, k)                            # k and above: dropped
    idx = jnp.full(k, b, jnp.int32).at[slot].set(jnp.arange(b, dtype=jnp.int32), mode="drop")
    src = pick[jnp.minimum(idx, b - 1)]
    return jax.tree.map(lambda x, p: x.at[idx].set(p[src], mode="drop"), current, pool)

  def _refresh(self, pool, next_slot, any_done, key, params):
    """Redraws `refresh_per_step` pool rows (round robin) on steps where an episode ended.

    Only the level generation sits under `lax.cond` (on other steps the rows are rewritten
    with their own values), so the pool is updated in place rather than copied by the cond."""
    rows = (next_slot + jnp.arange(self.refresh_per_step)) % self.pool_size
    def generate(k):
      if self.refresh_per_step == 1:  # unbatched: vmap would turn the generator's loops into
        return jax.tree.map(lambda x: x[None], self.env.reset_env(k, params))  # masked ones
      return jax.vmap(self.env.reset_env, in_axes=(0, None))(
          jax.random.split(k, self.refresh_per_step), params)
    keep = lambda k: jax.tree.map(lambda p: p[rows], pool)
    fresh = jax.lax.cond(any_done, generate, keep, key)
    pool = jax.tree.map(lambda p, n: p.at[rows].set(n), pool, fresh)
    next_slot = jnp.where(any_done, (next_slot + self.refresh_per_step) % self.pool_size,
                          next_slot)
    return pool, next_slot
