"""lib/generate/token_choice.py: the fused greedy step equals argmax + log_softmax exactly."""
import jax
import jax.numpy as jnp
import numpy as np

from lib.generate import token_choice


def test_first_argmax_matches_argmax_including_ties():
  x = jax.random.normal(jax.random.key(0), (6, 300))
  x = x.at[1, 7].set(9.0).at[1, 250].set(9.0)           # a tie: the first index wins, as argmax
  x = x.at[2].set(0.0)                                  # all equal -> index 0
  x = x.at[3, 299].set(50.0)                            # the last index
  got = np.asarray(token_choice.first_argmax(x))
  np.testing.assert_array_equal(got, np.asarray(jnp.argmax(x, axis=-1)))
  assert got[1] == 7 and got[2] == 0 and got[3] == 299 and got.dtype == np.int32


def test_first_argmax_nan_row_stays_in_range():
  x = jnp.zeros((2, 5)).at[0, 2].set(jnp.nan)
  got = np.asarray(token_choice.first_argmax(x))
  assert got[0] == 4 and got[1] == 0


def test_chosen_logprob_is_log_softmax_gather_bit_for_bit():
  logits = 5 * jax.random.normal(jax.random.key(1), (4, 1000))
  token = jnp.array([0, 999, 17, 500], jnp.int32)
  logp, shifted, lse = jax.jit(token_choice.chosen_logprob)(logits, token)
  ref = jax.jit(lambda x: jax.nn.log_softmax(x, axis=-1))(logits)
  np.testing.assert_array_equal(np.asarray(logp), np.asarray(ref)[np.arange(4), np.asarray(token)])
  np.testing.assert_allclose(np.asarray(shifted - lse), np.asarray(ref), rtol=0, atol=1e-6)
  # and against float64 numpy
  x = np.asarray(logits, np.float64)
  shifted = x - x.max(-1, keepdims=True)
  want = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
  np.testing.assert_allclose(np.asarray(logp), want[np.arange(4), np.asarray(token)], atol=1e-5)
