"""VmapAutoReset: identical to vmapped step_env while running, pooled resets when episodes end,
pool refreshed only on steps where an episode ended."""
import chex
import jax
import jax.numpy as jnp
import numpy as np

from envs import wrappers
from envs.sokoban import env as sk
from envs.sokoban import generator


def _env(max_steps=7):
  return sk.Sokoban(generator.generate_levels(seed=2, num_levels=16, height=7, width=7, num_boxes=2), max_steps)


def test_matches_plain_step_until_done_then_restarts_from_a_reset_state():
  env = _env()
  params = env.default_params
  w = wrappers.VmapAutoReset(env, num_envs=32, pool_size=8, refresh_per_step=2)
  obs, state = w.reset(jax.random.key(0))
  assert obs.shape == (32, 7, 7)
  step = w.step
  plain = jax.jit(jax.vmap(env.step_env, in_axes=(0, 0, 0, None)))
  starts = {l.tobytes() for l in np.asarray(jax.jit(jax.vmap(lambda lv: sk.board(sk.state_from_level(lv))))(params.levels))}
  saw_done = False
  for t in range(14):
    key = jax.random.key(100 + t)
    action = jax.random.randint(jax.random.key(t), (32,), 0, 4)
    keys = jax.random.split(jax.random.split(key, 3)[0], 32)
    p_obs, p_state, p_rew, p_term, _ = plain(keys, state.env_state, action, params)
    obs, new_state, rew, term, trunc, info = step(key, state, action)
    done = np.asarray(term | trunc)
    np.testing.assert_allclose(rew, p_rew)
    np.testing.assert_array_equal(info["final_observation"], p_obs)
    np.testing.assert_array_equal(np.asarray(obs)[~done], np.asarray(p_obs)[~done])
    obs_np, time_np = np.asarray(obs), np.asarray(new_state.env_state.time)
    for i in np.flatnonzero(done):
      saw_done = True
      assert obs_np[i].tobytes() in starts and time_np[i] == 0
    assert bool(trunc.any()) == (t % 7 == 6)  # all envs start together, so they truncate together
    # the pool is refreshed (2 rows, round robin) only on steps where some episode ended
    slot, new_slot = int(state.next_slot), int(new_state.next_slot)
    if done.any():
      assert new_slot == (slot + 2) % 8
    else:
      assert new_slot == slot
      jax.tree.map(np.testing.assert_array_equal, new_state.pool_state, state.pool_state)
    state = new_state
  assert saw_done


def test_jit_once_in_scan():
  env = _env()
  w = wrappers.VmapAutoReset(env, num_envs=16)

  @jax.jit
  @chex.assert_max_traces(n=1)
  def run(key):
    obs, state = w.reset(key)

    def body(state, k):
      obs, state, r, te, tr, _ = w.step(k, state, jax.random.randint(k, (16,), 0, 4))
      return state, r

    return jax.lax.scan(body, state, jax.random.split(key, 30))[1]

  a, b = run(jax.random.key(0)), run(jax.random.key(0))
  np.testing.assert_array_equal(a, b)
  assert a.shape == (30, 16) and np.isfinite(np.asarray(a)).all()


def test_restart_paths_agree():
  """Copying only the ended rows (max_restarts = num_envs) and the full select (max_restarts = 1,
  taken whenever two or more episodes end) give identical outputs and states, step by step."""
  env = _env(max_steps=5)
  few = wrappers.VmapAutoReset(env, num_envs=32, pool_size=8, max_restarts=32)
  full = wrappers.VmapAutoReset(env, num_envs=32, pool_size=8, max_restarts=1)
  _, s_few = few.reset(jax.random.key(3))
  _, s_full = full.reset(jax.random.key(3))
  n_done = []
  for t in range(12):
    key, action = jax.random.key(200 + t), jax.random.randint(jax.random.key(t), (32,), 0, 4)
    out_few, out_full = few.step(key, s_few, action), full.step(key, s_full, action)
    chex.assert_trees_all_equal(out_few, out_full)
    s_few, s_full = out_few[1], out_full[1]
    n_done.append(int((out_few[3] | out_few[4]).sum()))
  assert max(n_done) >= 2   # the full select really ran
  with np.testing.assert_raises(ValueError):
    wrappers.VmapAutoReset(env, num_envs=4, max_restarts=5)
