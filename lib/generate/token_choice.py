"""One decode step's token choice, the sampler's per-step work outside the model
(`lib.generate.sampling`): greedy or filtered sampling (temperature, top-k, top-p) and the chosen
token's log-probability, each as a few vectorisable reductions over [B, V] logits.
"""
import functools

import jax
import jax.numpy as jnp


def sample_logits(logits, key, temperature, top_p, top_k: int = 0):
  """One token per row: ids [B] int32 from logits [B,V] (filtering happens after temperature).

  Args:
    logits: [B,V]. key: one PRNG key, or [B] keys (one per row). temperature: <= 0 is greedy.
    top_p: keep the fewest most likely tokens whose mass reaches top_p (the top one stays).
    top_k: static int, keep the k largest logits (0 = off).
  """
  logits = logits.astype(jnp.float32)
  # A real branch: greedy decoding skips the sort and the random draw over the whole vocabulary.
  sample = functools.partial(_sample_filtered, top_k=top_k)
  greedy = lambda logits, *_: first_argmax(logits)
  return jax.lax.cond(temperature > 0, sample, greedy, logits, key, temperature, top_p)


def first_argmax(x, x_max=None):
  """jnp.argmax over the last axis (the first index of the maximum), as two plain reductions.

  XLA:CPU runs argmax as a variadic (value, index) reduction that does not vectorise; a max and a
  min over `where(x == max, index, V)` do. With `chosen_logprob` a greedy step's token choice on
  [8, 8192] logits took 97 us of CPU instead of 300 us (argmax + log_softmax gather, one core).
  Rows with a NaN give V - 1 (argmax gives the NaN's index).

  Args:
    x: [..., V] float. x_max: max(x, -1, keepdims=True) when the caller has it already.
  Returns:
    int32 [...].
  """
  x_max = jnp.max(x, axis=-1, keepdims=True) if x_max is None else x_max
  vocab = x.shape[-1]
  index = jnp.min(jnp.where(x == x_max, jnp.arange(vocab, dtype=jnp.int32), vocab), axis=-1)
  return jnp.minimum(index, vocab - 1)


def _sample_filtered(logits, key, temperature, top_p, *, top_k):
  scaled = logits / temperature
  if top_k > 0:
    kth = jax.lax.top_k(scaled, top_k)[0][..., -1:]
    scaled = jnp.where(scaled < kth, -jnp.inf, scaled)

  def nucleus(x):
    desc = -jnp.sort(-x, axis=-1)
    probs = jax.nn.softmax(desc, axis=-1)
    keep = (jnp.cumsum(probs, axis=-1) - probs) < top_p  # mass strictly before this token
    threshold = jnp.min(jnp.where(keep, desc, jnp.inf), axis=-1, keepdims=True)
    return jnp.where(x < threshold, -jnp.inf, x)

  scaled = jax.lax.cond(top_p < 1.0, nucleus, lambda x: x, scaled)
  if key.ndim:  # one key per row: a row's draw does not depend on the rest of its batch
    return jax.vmap(jax.random.categorical)(key, scaled).astype(jnp.int32)
  return jax.random.categorical(key, scaled, axis=-1).astype(jnp.int32)


def chosen_logprob(logits, token):
  """log_softmax(logits)[token] per row, without materialising the [B,V] log-probs.

  Same arithmetic as `jax.nn.log_softmax` ((x - max) - log sum exp(x - max)), so the values are
  bit-identical to gathering from it.

  Args:
    logits: [B,V] float32. token: [B] int32.
  Returns:
    (logp [B] float32, shifted [B,V] = logits - max, lse [B,1] = log sum exp(shifted)); callers
    that need every log-prob (top_logprobs) take shifted - lse.
  """
  shifted = logits - jnp.max(logits, axis=-1, keepdims=True)
  lse = jnp.log(jnp.sum(jnp.exp(shifted), axis=-1, keepdims=True))
  return jnp.take_along_axis(shifted, token[:, None], axis=-1)[:, 0] - lse[:, 0], shifted, lse
