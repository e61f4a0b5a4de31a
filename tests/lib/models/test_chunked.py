"""lib/models/chunked.py: vocabulary-chunked log-probs and entropies equal the full-logits path
(values and gradients, float32 and bfloat16, chunk sizes that do and do not divide the token
count), masked tokens get zero gradient, and a compiled SFT step's temporary memory shrinks by
about tokens / chunk for a large vocabulary."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from scipy.special import log_softmax

from lib import models
from lib.models import chunked
from lib.models.logprobs import token_logprobs
from lib.sft import step as sft
from lib.train import optim
from lib.train.state import TrainState, nnx_apply_fn

B, T, D, V = 3, 7, 16, 50        # 21 positions: chunk 4 leaves a padded last chunk


def _inputs(dtype=jnp.float32, seed=0):
  rng = np.random.default_rng(seed)
  hidden = jnp.asarray(rng.normal(size=(B, T, D)), dtype)
  head_w = jnp.asarray(rng.normal(size=(D, V)), dtype)
  tokens = jnp.asarray(rng.integers(0, V, (B, T)), jnp.int32)
  mask = jnp.asarray(rng.integers(0, 2, (B, T)).astype(bool))
  return hidden, head_w, tokens, mask


def _full(hidden, head_w, tokens, temperature):
  """The unchunked reference: [B, T, V] logits, then log-probs and entropies."""
  z = jnp.matmul(hidden, head_w, preferred_element_type=jnp.float32) / temperature
  logp_all = jax.nn.log_softmax(z, -1)
  return token_logprobs(z, tokens), -(jnp.exp(logp_all) * logp_all).sum(-1)


def _objective(logp, entropy, mask):
  return jnp.where(mask, logp + 0.1 * entropy, 0.0).sum()


@pytest.mark.parametrize("chunk", [4, 7, 21, 64])
def test_chunked_logprobs_entropy_and_gradients_equal_full_logits(chunk):
  hidden, head_w, tokens, mask = _inputs()
  for temperature in (1.0, 0.7):
    logp, ent = chunked.chunked_token_logprobs(hidden, head_w, tokens, chunk_tokens=chunk,
                                               temperature=temperature, with_entropy=True)
    want_logp, want_ent = _full(hidden, head_w, tokens, temperature)
    np.testing.assert_allclose(logp, want_logp, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(ent, want_ent, rtol=1e-6, atol=1e-6)
    assert (np.asarray(logp) <= 0).all()
    # and against an independent float64 NumPy log-softmax
    z = np.asarray(hidden, np.float64) @ np.asarray(head_w, np.float64) / temperature
    np.testing.assert_allclose(
        logp, np.take_along_axis(log_softmax(z, -1), np.asarray(tokens)[..., None], -1)[..., 0],
        rtol=1e-5, atol=1e-5)

    def f_chunked(h, w):
      lp, e = chunked.chunked_token_logprobs(h, w, tokens, chunk_tokens=chunk,
                                             temperature=temperature, with_entropy=True)
      return _objective(lp, e, mask)

    f_full = lambda h, w: _objective(*_full(h, w, tokens, temperature), mask)
    got, want = jax.grad(f_chunked, (0, 1))(hidden, head_w), jax.grad(f_full, (0, 1))(hidden, head_w)
    for g, w in zip(got, want):
      np.testing.assert_allclose(g, w, rtol=1e-6, atol=2e-6)
    assert np.all(np.asarray(got[0])[~np.asarray(mask)] == 0.0)   # masked tokens: exactly zero


@pytest.mark.parametrize("w_dtype", [jnp.bfloat16, jnp.float32])
def test_bfloat16_chunked_tracks_full_logits(w_dtype):
  """bfloat16 hidden states with a bfloat16 head, or with the float32 master head (cast per
  chunk, its gradient summed over the chunks in float32, as `nnx_apply_fn(hidden=True)` gives)."""
  hidden, head_w, tokens, mask = _inputs(jnp.bfloat16, seed=1)
  head_w = head_w.astype(w_dtype)
  f_chunked = lambda h, w: _objective(*chunked.chunked_token_logprobs(
      h, w, tokens, chunk_tokens=4, with_entropy=True), mask)
  f_full = lambda h, w: _objective(*_full(h, w.astype(h.dtype), tokens, 1.0), mask)
  np.testing.assert_allclose(float(f_chunked(hidden, head_w)), float(f_full(hidden, head_w)),
                             rtol=1e-2)
  for g, w, x in zip(jax.grad(f_chunked, (0, 1))(hidden, head_w),
                     jax.grad(f_full, (0, 1))(hidden, head_w), (hidden, head_w)):
    assert g.dtype == x.dtype
    np.testing.assert_allclose(np.asarray(g, np.float32), np.asarray(w, np.float32),
                               rtol=1e-2, atol=1e-2)


def test_map_token_chunks_rejects_a_zero_chunk():
  with pytest.raises(ValueError, match="chunk_tokens"):
    chunked.map_token_chunks(lambda x: x, 0, jnp.zeros((1, 2)))


def _sft_temp_bytes(loss_chunk_tokens, vocab=32768, rows=16, seq=256):
  """Temporary bytes of a compiled tiny-model SFT step (CPU backend), rows x seq = 4096 tokens."""
  model = models.build(models.preset("qwen3-tiny", vocab_size=vocab), rngs=nnx.Rngs(0))
  apply_fn, params = nnx_apply_fn(model)
  tx = optim.adamw(lr=1e-3, total_steps=10, warmup_frac=0.0, schedule="constant")
  state = jax.eval_shape(lambda p: TrainState.create(p, tx), params)
  batch = {k: jax.ShapeDtypeStruct((rows, seq), jnp.int32)
           for k in ("input_ids", "attention_mask", "loss_mask")}
  step = jax.jit(sft.make_sft_step(apply_fn, tx, loss_chunk_tokens=loss_chunk_tokens))
  return step.lower(state, batch).compile().memory_analysis().temp_size_in_bytes


def test_chunking_shrinks_the_sft_steps_temporary_memory():
  """vocab 32k, 4096 tokens: one float32 [4096, 32k] logits buffer is 512 MiB, and the full step
  holds ~3 of them (logits, softmax, cotangent); chunks of 512 hold ~3 [512, 32k] blocks (64 MiB
  each): tokens / chunk = 8x less for the head, the rest of the tiny model being negligible."""
  full, chunk = _sft_temp_bytes(0), _sft_temp_bytes(512)
  logits_bytes = 4096 * 32768 * 4
  assert full > 2 * logits_bytes                  # the unchunked step holds several [N, V] buffers
  assert chunk < logits_bytes                     # less than one of them
  assert full / chunk > 5, (full, chunk)
