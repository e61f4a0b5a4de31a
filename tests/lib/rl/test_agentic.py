"""lib/rl/agentic.py: episode returns, GRPO / GiGPO advantages against a hand computation, the
token-in/token-out batch and the update's zero gradient on prompt (env) tokens."""
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from lib.rl import agentic, grpo, losses as rl
from lib.train.state import TrainState


def turn(anchor, step, prompt=(5, 6, 7), response=(8, 9)):
  return agentic.Turn(tuple(prompt), tuple(response), tuple(-0.5 for _ in response), anchor, step)


def ep(group, member, anchors, rewards, success=False, extra_turns=()):
  turns = tuple(turn(a, t) for t, a in enumerate(anchors)) + tuple(extra_turns)
  return agentic.Episode(group, member, turns, tuple(rewards), success, "truncated")


def hand_set():
  """Group 0: three episodes over anchors A, B, C; group 1: one episode (alone)."""
  return [
      ep(0, 0, ["A", "B"], [0.0, 1.0], success=True),
      # a call that led to no step (the call budget ran out): episode advantage only
      ep(0, 1, ["A", "C"], [0.0, 0.0], extra_turns=(turn("C2", 2),)),
      # two calls before step 0 (a refine), and anchor B twice in one episode
      ep(0, 2, ["A", "B", "B"], [0.0, 0.0, 1.0], success=True,
         extra_turns=(turn("A", 0),)),
      ep(1, 0, ["A"], [1.0], success=True),
  ]


def test_discounted_returns():
  np.testing.assert_allclose(agentic.discounted_returns([0.0, 0.0, 1.0], 0.5),
                             [0.25, 0.5, 1.0, 0.0])
  np.testing.assert_allclose(agentic.discounted_returns([1.0, 2.0], 1.0), [3.0, 2.0, 0.0])


def test_step_groups_on_a_hand_made_episode_set():
  groups = agentic.step_groups(hand_set())
  assert groups == {(0, "A"): [(0, 0), (1, 0), (2, 0)], (0, "B"): [(0, 1), (2, 1), (2, 2)],
                    (0, "C"): [(1, 1)], (1, "A"): [(3, 0)]}
  # steps without a text observation are never grouped (their step advantage is 0)
  blind = [ep(0, m, [None, None], [0.0, float(m)]) for m in range(3)]
  assert agentic.step_groups(blind) == {}
  assert all(not a.any() for a in agentic.step_advantages(blind, agentic.AgenticConfig()))


def test_gigpo_advantages_match_the_hand_computation():
  cfg = agentic.AgenticConfig(gamma=0.5, omega=0.5)
  eps = hand_set()
  # Episode returns (gamma 0.5): 0.5, 0, 0.25 in group 0 -> mean 0.25, std (ddof 1) 0.25.
  np.testing.assert_allclose(agentic.episode_advantages(eps, cfg), [1.0, -1.0, 0.0, 0.0],
                             atol=1e-5)
  # Step returns: A-group {0.5, 0, 0.25} -> (1, -1, 0); B-group {1, 0.5, 1}: mean 5/6,
  # std sqrt(1/12) -> (1/sqrt 3, -2/sqrt 3, 1/sqrt 3); C and group 1's A are alone -> 0.
  s = 1 / np.sqrt(3)
  st = agentic.step_advantages(eps, cfg)
  for got, want in zip(st, [[1.0, s], [-1.0, 0.0], [0.0, -2 * s, s], [0.0]]):
    np.testing.assert_allclose(got, want, atol=1e-5)
  adv = agentic.turn_advantages(eps, cfg)
  want = [[1 + 0.5, 1 + 0.5 * s], [-1 - 0.5, -1 + 0.0, -1.0],
          [0.0, -0.5 * 2 * s, 0.5 * s, 0.0], [0.0]]
  for got, w in zip(adv, want):
    np.testing.assert_allclose(got, w, atol=1e-5)
  # omega 0: the episode's advantage on every turn (plain episode-level GRPO)
  plain = agentic.turn_advantages(eps, agentic.AgenticConfig(gamma=0.5))
  for got, w in zip(plain, [[1.0] * 2, [-1.0] * 3, [0.0] * 4, [0.0]]):
    np.testing.assert_allclose(got, w, atol=1e-5)


def test_success_reward_and_group_advantages_agree():
  cfg = agentic.AgenticConfig(reward="success")
  eps = hand_set()
  want = np.asarray(rl.group_advantages(np.array([[1.0, 0.0, 1.0]])))[0]
  np.testing.assert_allclose(agentic.episode_advantages(eps, cfg)[:3], want, atol=1e-6)
  # success as the step reward: only the last step is rewarded
  st = agentic.step_advantages(eps, agentic.AgenticConfig(reward="success", gamma=1.0))
  assert st[0][0] > 0 > st[1][0]


def test_config_rejects_unknown_values():
  with pytest.raises(ValueError, match="agentic.reward"):
    agentic.AgenticConfig(reward="score")
  with pytest.raises(ValueError, match="agentic block has no fields"):
    agentic.AgenticConfig.from_config({"omgea": 1.0})


def test_batch_lays_out_the_turns_own_tokens():
  eps = [ep(0, 0, ["A", "B"], [0.0, 1.0]), ep(0, 1, ["A"], [0.0])]
  eps[1] = agentic.Episode(0, 1, (agentic.Turn((1, 2, 3, 4, 5), (6,), (-0.1,), "A", 0),),
                           (0.0,), False, "failure")
  adv = [np.array([1.0, 2.0]), np.array([3.0])]
  data = agentic.batch(eps, adv, pad_id=0, response_len=4)
  p = 16   # bucket_length of the longest prompt (5)
  assert data["input_ids"].shape == (4, p + 4)   # 3 turns -> 4 rows (one dead)
  np.testing.assert_array_equal(data["input_ids"][2, p - 5:p + 1], [1, 2, 3, 4, 5, 6])
  np.testing.assert_array_equal(data["response_mask"][:, :2], [[1, 1], [1, 1], [1, 0], [0, 0]])
  np.testing.assert_array_equal(data["attention_mask"][0], [0] * 13 + [1] * 5 + [0] * 2)
  np.testing.assert_array_equal(data["advantages"], [1.0, 2.0, 3.0, 0.0])
  np.testing.assert_allclose(data["sample_logp"][2], [-0.1, 0, 0, 0])
  assert data["episode"].tolist() == [0, 0, 1, -1] and data["turn"].tolist() == [0, 1, 0, -1]
  with pytest.raises(ValueError, match="exceeds the turn cap"):
    agentic.batch(eps, adv, pad_id=0, response_len=1)


def test_prompt_and_env_tokens_get_zero_gradient():
  """One real update step on a logit table: only positions that score response tokens move."""
  eps = [ep(0, 0, ["A", "B"], [0.0, 1.0]), ep(0, 1, ["A"], [0.0])]
  data = agentic.batch(eps, [np.array([1.0, -0.5]), np.array([-1.0])], pad_id=0, response_len=4)
  rows, width = data["input_ids"].shape
  vocab = 12
  bias = jax.random.normal(jax.random.key(0), (rows, width, vocab))

  def apply_fn(params, ids, mask, last=0, hidden=False):   # a "model" that is a logit table
    del ids, mask
    table = params["bias"][:, -last:] if last else params["bias"]
    return (table, jnp.eye(vocab)) if hidden else table   # hidden states x identity head

  cfg = grpo.GRPOConfig(kl_coef=0.1, entropy_coef=0.01)
  tx = optax.sgd(1.0)
  step = jax.jit(grpo.make_grpo_step(apply_fn, tx, cfg))
  state = TrainState.create({"bias": bias}, tx)
  n = data["response_mask"].shape[1]
  ref = jnp.asarray(np.random.default_rng(0).normal(-2.0, 0.1, (rows, n)), jnp.float32)
  batch = {k: jnp.asarray(data[k]) for k in ("input_ids", "attention_mask", "response_mask",
                                             "advantages")}
  new, _ = step(state, {**batch, "ref_logp": ref})
  moved = np.abs(np.asarray(new.params["bias"] - bias)).sum(-1) > 0   # [rows, width]
  p = width - n
  want = np.zeros_like(moved)
  for r in range(rows):
    k = int(data["response_mask"][r].sum())
    want[r, p - 1:p - 1 + k] = True   # position t scores token t + 1: the response tokens only
  np.testing.assert_array_equal(moved, want)
