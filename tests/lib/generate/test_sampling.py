"""KV-cache sampler against the model's own full (cache-free) forward pass, an independent NumPy
version of the top-k/top-p filter, and the trace counter."""
import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from lib import models
from lib.generate import sampling
from lib.models import tokenizer

N_NEW = 6


def _peaky(config, seed):
  """A random model with large weights, so next-token distributions are far from uniform and
  argmax decisions are not decided by float noise."""
  model = models.build(config, rngs=nnx.Rngs(seed))
  nnx.update(model, jax.tree.map(lambda x: 8.0 * x, nnx.state(model, nnx.Param)))
  return model


@pytest.fixture(scope="module")
def model():
  return _peaky(models.preset("qwen3-tiny"), seed=0)


_forward = nnx.jit(lambda m, ids, mask: m(ids, mask))


def _prompts(lengths, seed=0):
  rng = np.random.default_rng(seed)
  return [rng.integers(3, 128, n).tolist() for n in lengths]


def _full_forward_tokens(model, ids, mask, new_tokens):
  """[B,P] prompt + [B,N] generated -> float32 log_softmax [B,N,V] scoring each generated token."""
  full_ids = np.concatenate([ids, new_tokens], axis=1)
  full_mask = np.concatenate([mask, np.ones_like(new_tokens)], axis=1)
  logits = np.asarray(_forward(model, jnp.asarray(full_ids), jnp.asarray(full_mask)), np.float64)
  logits = logits[:, ids.shape[1] - 1:-1]
  return logits - np.log(np.exp(logits - logits.max(-1, keepdims=True)).sum(-1, keepdims=True)) \
      - logits.max(-1, keepdims=True)


def test_greedy_equals_stepwise_argmax_of_full_forward(model):
  ids, mask = sampling.left_pad(_prompts([3, 7, 5]))
  out = sampling.generate(*nnx.split(model), ids, mask, jax.random.key(0), max_new_tokens=N_NEW,
                          temperature=0.0)
  # Reference: a growing buffer of fixed shape (later slots cannot influence earlier ones).
  buf = np.concatenate([ids, np.zeros((3, N_NEW), np.int32)], axis=1)
  buf_mask = np.concatenate([mask, np.ones((3, N_NEW), np.int32)], axis=1)
  for step in range(N_NEW):
    logits = np.asarray(_forward(model, jnp.asarray(buf), jnp.asarray(buf_mask)))
    buf[:, ids.shape[1] + step] = logits[:, ids.shape[1] + step - 1].argmax(-1)
  np.testing.assert_array_equal(np.asarray(out.tokens), buf[:, ids.shape[1]:])
  assert np.asarray(out.lengths).tolist() == [N_NEW] * 3


def test_logprobs_are_log_softmax_of_full_forward_at_sampled_tokens(model):
  ids, mask = sampling.left_pad(_prompts([2, 6, 4], seed=1))
  out = sampling.generate(*nnx.split(model), ids, mask, jax.random.key(1), max_new_tokens=N_NEW,
                          temperature=1.3, top_k=20, top_p=0.95)
  tokens = np.asarray(out.tokens)
  ref = _full_forward_tokens(model, ids, mask, tokens)
  expected = np.take_along_axis(ref, tokens[..., None], -1)[..., 0]
  np.testing.assert_allclose(np.asarray(out.logprobs), expected, atol=1e-4)
  # Every sampled token is among the 20 most likely ones at its step.
  rank = (ref > expected[..., None]).sum(-1)
  assert rank.max() < 20


def test_batch_of_mixed_lengths_equals_each_prompt_alone(model):
  prompts = _prompts([3, 20], seed=2)  # buckets 16 and 32: the short prompt is padded differently
  ids, mask = sampling.left_pad(prompts)
  batch = sampling.generate(*nnx.split(model), ids, mask, jax.random.key(0), max_new_tokens=N_NEW,
                            temperature=0.0)
  for row, prompt in enumerate(prompts):
    alone = sampling.generate(*nnx.split(model), *sampling.left_pad([prompt]), jax.random.key(0),
                              max_new_tokens=N_NEW, temperature=0.0)
    np.testing.assert_array_equal(np.asarray(alone.tokens[0]), np.asarray(batch.tokens[row]))
    np.testing.assert_allclose(np.asarray(alone.logprobs[0]), np.asarray(batch.logprobs[row]),
                               atol=1e-4)


def test_eos_stops_each_row_on_device(model):
  ids, mask = sampling.left_pad(_prompts([3, 7, 5], seed=3))
  free = sampling.generate(*nnx.split(model), ids, mask, jax.random.key(0), max_new_tokens=N_NEW,
                           temperature=0.0)
  free_tokens = np.asarray(free.tokens)
  eos = int(free_tokens[0, 2])
  stopped = sampling.generate(*nnx.split(model), ids, mask, jax.random.key(0),
                              max_new_tokens=N_NEW, temperature=0.0, eos_ids=(eos,), pad_id=0)
  tokens, logprobs = np.asarray(stopped.tokens), np.asarray(stopped.logprobs)
  for row in range(3):
    hits = np.flatnonzero(free_tokens[row] == eos)
    length = int(hits[0]) + 1 if hits.size else N_NEW
    assert int(stopped.lengths[row]) == length
    np.testing.assert_array_equal(tokens[row, :length], free_tokens[row, :length])
    assert (tokens[row, length:] == 0).all() and (logprobs[row, length:] == 0).all()
  assert int(stopped.lengths[0]) <= 3


def test_same_key_same_samples_other_key_other_samples(model):
  ids, mask = sampling.left_pad(_prompts([2, 6, 4], seed=1))
  run = lambda seed: np.asarray(sampling.generate(
      *nnx.split(model), ids, mask, jax.random.key(seed), max_new_tokens=N_NEW, temperature=1.3,
      top_k=20, top_p=0.95).tokens)
  np.testing.assert_array_equal(run(7), run(7))
  assert (run(7) != run(8)).any()


def _numpy_filtered_probs(logits, temperature, top_k, top_p):
  z = logits / temperature
  order = np.argsort(-z)
  keep = np.zeros_like(z, bool)
  keep[order[:top_k] if top_k else order] = True
  z = np.where(keep, z, -np.inf)
  p = np.exp(z - z.max())
  p /= p.sum()
  sorted_p = p[order]
  before = np.cumsum(sorted_p) - sorted_p
  nucleus = np.zeros_like(keep)
  nucleus[order[before < top_p]] = True
  p = np.where(nucleus, p, 0.0)
  return p / p.sum()


@pytest.mark.parametrize("temperature,top_k,top_p", [(0.7, 5, 1.0), (1.3, 0, 0.8), (1.0, 4, 0.6)])
def test_sample_logits_matches_numpy_filtered_distribution(temperature, top_k, top_p):
  logits = np.random.default_rng(0).normal(0, 1.5, 12).astype(np.float32)
  n = 20_000
  draw = jax.jit(jax.vmap(lambda k: sampling.sample_logits(
      jnp.asarray(logits)[None], k, temperature, top_p, top_k)[0]))
  samples = np.asarray(draw(jax.random.split(jax.random.key(0), n)))
  freq = np.bincount(samples, minlength=12) / n
  expected = _numpy_filtered_probs(logits.astype(np.float64), temperature, top_k, top_p)
  assert set(np.flatnonzero(freq)) <= set(np.flatnonzero(expected))
  assert 0.5 * np.abs(freq - expected).sum() < 0.02


def test_sample_logits_greedy_at_zero_temperature():
  logits = jax.random.normal(jax.random.key(0), (4, 50))
  tokens = sampling.sample_logits(logits, jax.random.key(1), 0.0, 0.5, 3)
  np.testing.assert_array_equal(np.asarray(tokens), np.asarray(logits.argmax(-1)))


def test_one_compile_per_batch_and_length_bucket(model, monkeypatch):
  counted = sampling._jit(chex.assert_max_traces(sampling._generate_impl, n=1))
  monkeypatch.setattr(sampling, "_generate_jit", counted)
  graphdef, state = nnx.split(model)
  for seed, lengths in enumerate([[3, 9], [16, 1], [5, 5]]):  # all in the 16-token bucket
    ids, mask = sampling.left_pad(_prompts(lengths, seed=seed))
    sampling.generate(graphdef, state, ids, mask, jax.random.key(seed), max_new_tokens=N_NEW,
                      temperature=0.5 * seed, top_p=1.0 - 0.1 * seed)
  ids, mask = sampling.left_pad(_prompts([17, 2]))  # the 32-token bucket needs a second trace
  with pytest.raises(AssertionError):
    sampling.generate(graphdef, state, ids, mask, jax.random.key(0), max_new_tokens=N_NEW)


def test_prompts_must_be_left_padded(model):
  ids, mask = sampling.left_pad(_prompts([3, 5]))
  with pytest.raises(ValueError, match="left-padded"):
    sampling.generate(*nnx.split(model), ids[:, ::-1], mask[:, ::-1], jax.random.key(0),
                      max_new_tokens=2)
  with pytest.raises(ValueError, match="at least one token"):
    sampling.left_pad([[1, 2], []])


@pytest.fixture(scope="module")
def chat_setup(tmp_path_factory):
  texts = [f"The agent at row {i} moves {d} and picks up the {o}." for i in range(40)
           for d, o in (("north", "key"), ("east", "box"), ("south", "gem"))]
  tok = tokenizer.train_tokenizer(texts, 320, tmp_path_factory.mktemp("tok"))
  return _peaky(models.preset("qwen3-tiny", vocab_size=len(tok)), seed=4), tok


def test_generate_text_renders_chat_and_counts_tokens(chat_setup):
  model, tok = chat_setup
  prompts = [[{"role": "user", "content": "Where is the key?"}], "The agent at row 3 moves"]
  outs = sampling.generate_text(model, tok, prompts, jax.random.key(0), max_new_tokens=12,
                                temperature=0.0, eos_ids=())
  rendered = tokenizer.render_chat(tok, prompts[0])
  assert outs[0].prompt_tokens == len(tok.encode(rendered, add_special_tokens=False))
  assert outs[1].prompt_tokens == len(tok.encode(prompts[1], add_special_tokens=False))
  for out in outs:
    assert out.completion_tokens == len(out.token_ids) == len(out.logprobs) == 12
    assert out.text == tok.decode(out.token_ids) and out.finish_reason == "length"


def test_stop_strings_cut_exactly(chat_setup):
  model, tok = chat_setup
  prompts = ["The agent at row 7 moves", "picks up the"]
  key = jax.random.key(3)
  free = sampling.generate_text(model, tok, prompts, key, max_new_tokens=16, temperature=0.0,
                                eos_ids=())
  stop = free[0].text[5:7]
  assert len(stop) == 2
  cut = sampling.generate_text(model, tok, prompts, key, max_new_tokens=16, temperature=0.0,
                               eos_ids=(), stop=[stop, "no such string"])
  for before, after in zip(free, cut):
    if stop not in before.text:
      assert after == before
      continue
    assert after.text == before.text[:before.text.index(stop)]
    n = after.completion_tokens
    assert after.token_ids == before.token_ids[:n] and after.logprobs == before.logprobs[:n]
    assert stop in tok.decode(after.token_ids) and stop not in tok.decode(after.token_ids[:-1])
    assert after.finish_reason == "stop"


def test_chunked_decode_equals_one_loop_and_top_logprobs_are_the_top_k(model):
  ids, mask = sampling.left_pad(_prompts([2, 6, 4], seed=1))
  kw = dict(max_new_tokens=N_NEW, temperature=1.3, top_k=20, top_p=0.95, top_logprobs=3)
  whole = sampling.generate(*nnx.split(model), ids, mask, jax.random.key(1), **kw)
  calls = []
  chunked = sampling.generate(*nnx.split(model), ids, mask, jax.random.key(1), chunk_size=2,
                              on_chunk=lambda lengths, done, tokens: calls.append(lengths.copy())
                              or np.zeros(3, bool), **kw)
  for a, b in zip(whole, chunked):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=1e-5)
  assert [c.tolist() for c in calls] == [[2, 2, 2], [4, 4, 4]]  # host sees every chunk boundary
  ref = _full_forward_tokens(model, ids, mask, np.asarray(whole.tokens))
  expected_ids = np.argsort(-ref, axis=-1)[..., :3]
  np.testing.assert_array_equal(np.asarray(whole.top_ids), expected_ids)
  np.testing.assert_allclose(np.asarray(whole.top_logprobs),
                             np.take_along_axis(ref, expected_ids, -1), atol=1e-4)


def test_cancelled_rows_stop_at_the_next_chunk_and_the_batch_ends_early(model):
  ids, mask = sampling.left_pad(_prompts([3, 5], seed=2))
  seen = []

  def cancel_row_0_then_all(lengths, done, tokens):
    assert tokens.shape == (2, 64)
    seen.append(lengths.tolist())
    return np.array([True, len(seen) > 1])

  out = sampling.generate(*nnx.split(model), ids, mask, jax.random.key(0), max_new_tokens=64,
                          temperature=0.0, chunk_size=4, on_chunk=cancel_row_0_then_all)
  assert np.asarray(out.lengths).tolist() == [4, 8]  # row 0 stopped after chunk 1, row 1 after 2
  assert seen == [[4, 4], [4, 8]]  # two chunks of a 64-token budget ran, not sixteen
  assert (np.asarray(out.tokens)[0, 4:] == 0).all()


def test_per_row_keys_make_a_row_independent_of_its_batch(model):
  prompts = _prompts([3, 5, 4], seed=5)
  keys = jax.random.split(jax.random.key(9), 3)
  kw = dict(max_new_tokens=N_NEW, temperature=1.0)
  batch = sampling.generate(*nnx.split(model), *sampling.left_pad(prompts), keys, **kw)
  alone = sampling.generate(*nnx.split(model), *sampling.left_pad(prompts[1:2]), keys[1:2], **kw)
  np.testing.assert_array_equal(np.asarray(alone.tokens[0]), np.asarray(batch.tokens[1]))
  with pytest.raises(ValueError, match="one per row"):
    sampling.generate(*nnx.split(model), *sampling.left_pad(prompts), keys[:2], **kw)


def test_prompt_bucket_is_a_power_of_two_then_multiples_of_the_step():
  assert [sampling.prompt_bucket(n) for n in (1, 16, 17, 200, 256)] == [16, 16, 32, 256, 256]
  assert [sampling.prompt_bucket(n) for n in (257, 263, 384, 385, 1000)] == [384, 384, 384, 512,
                                                                              1024]
  assert sampling.prompt_bucket(300, step=64) == 320
