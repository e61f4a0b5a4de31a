"""Sokoban rules, rewards, spaces, determinism and jit-once; plus equivalence with jumanji's Sokoban."""
import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
from envs.sokoban import env as sk
from envs.sokoban import generator, jumanji_peer
from envs.sokoban import levels as lv

UP, DOWN, LEFT, RIGHT = range(4)


def _run(level_text, actions, max_steps=120):
  """Steps without auto-reset; returns [(state, reward, terminated, truncated)] per action."""
  env = sk.Sokoban(lv.from_ascii(level_text)[None], max_steps)
  params = env.default_params
  state = sk.state_from_level(params.levels[0], 0)
  out = []
  for a in actions:
    _, state, reward, term, _ = env.step_env(jax.random.key(0), state, jnp.int32(a), params)
    out.append((state, float(reward), bool(term), bool(env.is_truncated(state, params))))
  return out


def _cells(mask):
  return sorted(map(tuple, np.argwhere(np.asarray(mask)).tolist()))


def test_free_move_and_wall_bump():
  level = "######\n#@ $.#\n######"
  (s1, r1, t1, _), (s2, r2, _, _) = _run(level, [UP, LEFT])
  assert tuple(s1.player.tolist()) == (1, 1) and r1 == pytest.approx(-0.1) and not t1
  assert tuple(s2.player.tolist()) == (1, 1) and r2 == pytest.approx(-0.1)
  (s3, r3, _, _), = _run(level, [RIGHT])
  assert tuple(s3.player.tolist()) == (1, 2) and _cells(s3.boxes) == [(1, 3)] and r3 == pytest.approx(-0.1)


def test_push_into_wall_is_blocked():
  (s, r, t, _), = _run("######\n#@$#.#\n#    #\n######", [RIGHT])
  assert tuple(s.player.tolist()) == (1, 1) and _cells(s.boxes) == [(1, 2)]
  assert r == pytest.approx(-0.1) and not t


def test_push_into_box_is_blocked():
  (s, r, _, _), = _run("#######\n#@$$..#\n#######", [RIGHT])
  assert tuple(s.player.tolist()) == (1, 1) and _cells(s.boxes) == [(1, 2), (1, 3)]
  assert r == pytest.approx(-0.1)


def test_box_onto_last_target_wins():
  (s, r, t, _), = _run("######\n#@$. #\n######", [RIGHT])
  assert tuple(s.player.tolist()) == (1, 2) and _cells(s.boxes) == [(1, 3)]
  assert r == pytest.approx(-0.1 + 1.0 + 10.0) and t


def test_box_onto_target_not_last():
  (s, r, t, _), = _run("#######\n#@$. .#\n#  $  #\n#######", [RIGHT])
  assert r == pytest.approx(-0.1 + 1.0) and not t and _cells(s.boxes & s.targets) == [(1, 3)]


def test_box_off_target_and_target_to_target():
  (_, r_off, t, _), = _run("#######\n#@*  .#\n#  $  #\n#######", [RIGHT])
  assert r_off == pytest.approx(-0.1 - 1.0) and not t
  (s, r_tt, _, _), = _run("#######\n#@*. $#\n#######", [RIGHT])
  assert r_tt == pytest.approx(-0.1) and _cells(s.boxes) == [(1, 3), (1, 5)]


def test_win_with_other_box_already_placed():
  (_, r, t, _), = _run("#######\n#@$.* #\n#######", [RIGHT])
  assert r == pytest.approx(10.9) and t


def test_player_on_target_and_truncation():
  out = _run("######\n#+ $ #\n#  . #\n# $  #\n######", [RIGHT, LEFT, RIGHT], max_steps=3)
  assert [o[3] for o in out] == [False, False, True]
  assert tuple(out[1][0].player.tolist()) == (1, 1)


def test_step_autoresets_and_reports_terminated():
  env = sk.Sokoban(lv.from_ascii("######\n#@$. #\n######")[None])
  params = env.default_params
  obs, state = env.reset(jax.random.key(0), params)
  obs2, state2, reward, term, trunc, info = env.step(jax.random.key(1), state, RIGHT, params)
  assert bool(term) and not bool(trunc) and float(reward) == pytest.approx(10.9)
  np.testing.assert_array_equal(obs2, obs)  # back at the start level
  assert int(state2.time) == 0
  assert int(info["final_observation"][1, 3]) == lv.BOX_ON_TARGET


def _bank():
  return generator.generate_levels(seed=3, num_levels=8, height=8, width=8, num_boxes=2)


def test_jit_once_and_same_key_same_trajectory():
  env = sk.Sokoban(_bank(), max_steps_in_episode=30)
  params = env.default_params

  @jax.jit
  @chex.assert_max_traces(n=1)
  def rollout(key):
    obs, state = env.reset(key, params)

    def body(state, k):
      a = jax.random.randint(k, (), 0, 4)
      obs, state, r, te, tr, _ = env.step(k, state, a, params)
      return state, (obs, r, te, tr)

    return jax.lax.scan(body, state, jax.random.split(key, 80))[1]

  a = rollout(jax.random.key(5))
  b = rollout(jax.random.key(5))
  c = rollout(jax.random.key(6))
  jax.tree.map(np.testing.assert_array_equal, a, b)
  assert not np.array_equal(a[0], c[0])
  obs, r, te, tr = a
  space = env.observation_space(params)
  assert obs.dtype == jnp.int8 and obs.shape == (80, 8, 8) and bool(jax.vmap(space.contains)(obs).all())
  assert np.isfinite(np.asarray(r)).all() and r.dtype == jnp.float32
  assert bool(tr.any())  # 80 random steps with a 30-step limit must hit truncation
  # every observation shows exactly one player and two boxes
  players = ((obs == lv.PLAYER) | (obs == lv.PLAYER_ON_TARGET)).sum((1, 2))
  boxes = ((obs == lv.BOX) | (obs == lv.BOX_ON_TARGET)).sum((1, 2))
  assert (players == 1).all() and (boxes == 2).all()


def test_registry_make_and_spaces():
  env = envs.make("Sokoban-v0", levels=_bank(), max_steps_in_episode=60)
  assert env.num_actions == 4 and env.action_space().n == 4
  obs, state = env.reset(jax.random.key(0))
  assert bool(env.observation_space().contains(obs))
  assert int(state.level_index) in range(8)


def test_matches_jumanji_sokoban_on_random_actions():
  """Same 10x10 4-box levels, same random actions: same player, boxes, rewards and termination."""
  from jumanji.environments.routing.sokoban import Sokoban as JSokoban
  levels = generator.generate_levels(seed=11, num_levels=6, height=10, width=10, num_boxes=4)
  ours = sk.Sokoban(levels, max_steps_in_episode=1000)
  params = ours.default_params
  theirs = JSokoban(generator=jumanji_peer.make_bank_generator(levels), time_limit=1000)
  fixed, variable = jumanji_peer.split_grids(levels)
  actions = jnp.asarray(np.random.default_rng(0).integers(0, 4, size=(len(levels), 200)), jnp.int32)
  jstate0, _ = theirs.reset(jax.random.key(0))

  def episode(i, acts):
    state = sk.state_from_level(params.levels[i], i)
    jstate = jstate0.replace(fixed_grid=jnp.asarray(fixed)[i], variable_grid=jnp.asarray(variable)[i],
                             agent_location=state.player)

    def body(carry, a):
      state, jstate = carry
      _, state, reward, term, _ = ours.step_env(jax.random.key(0), state, a, params)
      jstate, ts = theirs.step(jstate, jnp.asarray(jumanji_peer.OUR_TO_JUMANJI_ACTION)[a])
      return (state, jstate), (state.player, state.boxes, reward, term, jstate.agent_location,
                               jstate.variable_grid == 4, ts.reward, ts.last())

    return jax.lax.scan(body, (state, jstate), acts)[1]

  out = jax.jit(jax.vmap(episode))(jnp.arange(len(levels)), actions)
  player, boxes, reward, term, jplayer, jboxes, jreward, jlast = map(np.asarray, out)
  for i in range(len(levels)):
    n = int(np.argmax(term[i])) + 1 if term[i].any() else term.shape[1]  # compare up to the win
    np.testing.assert_array_equal(player[i, :n], jplayer[i, :n])
    np.testing.assert_array_equal(boxes[i, :n], jboxes[i, :n])
    np.testing.assert_allclose(reward[i, :n], jreward[i, :n], atol=1e-5)
    np.testing.assert_array_equal(term[i, :n], jlast[i, :n])
  assert (np.abs(np.diff(player, axis=1)).sum(-1) > 0).mean() > 0.3  # the walks really move
  assert (boxes[:, 1:] != boxes[:, :-1]).any()  # and push boxes
