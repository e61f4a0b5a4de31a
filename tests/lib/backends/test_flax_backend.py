"""Flax backend: batched, grouped, padded generation equals the sampler run per prompt; usage
counts equal the tokenizer's; embeddings equal `lib.models.embed` on a right-padded batch (the
backend left-pads, so padding handling is checked too). Prompts share one length bucket and batch
sizes stay within {1, 4} so the test compiles two sampler programs."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lib import models
from lib.backends.flax_backend import FlaxBackend, score_tokens
from lib.backends.protocol import SamplingParams
from lib.generate import sampling


@pytest.fixture(scope="module")
def backend(tmp_path_factory):
  return FlaxBackend.tiny(tmp_path_factory.mktemp("tiny"), seed=1)


CONVS = [[{"role": "user", "content": "the box is left of the goal"}],
         [{"role": "system", "content": "Act."}, {"role": "user", "content": "go up"}],
         [{"role": "user", "content": "Inventory: wood 2, stone 1."}],
         [{"role": "user", "content": "A zombie is nearby."}]]


def test_batched_generation_equals_each_prompt_alone(backend):
  greedy = SamplingParams(max_tokens=5, temperature=0.0)
  tok = backend.tokenizer
  lengths = [len(tok.encode(tok.apply_chat_template(c, tokenize=False, add_generation_prompt=True),
                            add_special_tokens=False)) for c in CONVS]
  assert all(16 < n <= 32 for n in lengths), lengths  # one prompt bucket
  out = backend.generate(CONVS[:3], greedy)  # batch 3, padded to 4
  for conv, c in zip(CONVS, out):
    (alone,) = sampling.generate_text(backend.model, backend.tokenizer, [conv],
                                      jax.random.PRNGKey(0), max_new_tokens=5, temperature=0.0)
    assert c.text == alone.text and c.output_tokens == alone.completion_tokens
    prompt = backend.tokenizer.apply_chat_template(conv, tokenize=False,
                                                   add_generation_prompt=True)
    assert c.input_tokens == len(backend.tokenizer.encode(prompt, add_special_tokens=False))
  # Two settings in one call are split into groups; each matches its own call.
  hot = SamplingParams(max_tokens=5, temperature=1.0, seed=3)
  mixed = backend.generate([CONVS[0], CONVS[3], CONVS[1], CONVS[2]], [greedy, hot, greedy, greedy])
  assert [mixed[0].text, mixed[2].text, mixed[3].text] == [c.text for c in out]
  sampled = backend.generate([CONVS[3]], hot)
  assert mixed[1].text == sampled[0].text
  u = backend.usage.snapshot()
  assert (u["batches"], u["calls"], u["usage_coverage"]) == (3, 8, 1.0)


def test_embeddings_equal_model_embed_on_right_padded_batch(backend):
  texts = ["a box left of the goal", "x", "Range [0, 7]. Feedback: lower."]
  got = backend.embed(texts)
  enc = [backend.tokenizer.encode(t, add_special_tokens=False) for t in texts]
  width = max(map(len, enc))
  ids = jnp.asarray([e + [0] * (width - len(e)) for e in enc])
  mask = jnp.asarray([[1] * len(e) + [0] * (width - len(e)) for e in enc])
  np.testing.assert_allclose(got, np.asarray(models.embed(backend.model, ids, mask)), atol=1e-5)
  assert got.shape == (3, backend.model.config.hidden_size)


def test_prompt_scoring_in_token_chunks_equals_the_full_logits(backend):
  """score_tokens over chunks of 5 positions (2 rows x 15 scored positions: not a divisor) equals
  a log-softmax of the full forward's logits: chosen log-probs, top ids and top log-probs."""
  rng = np.random.default_rng(0)
  ids = jnp.asarray(rng.integers(3, backend.model.config.vocab_size, (2, 16)), jnp.int32)
  mask = jnp.ones_like(ids).at[0, :4].set(0)              # one left-padded row
  got = jax.jit(score_tokens, static_argnums=(3, 4))(backend.model, ids, mask, 3, 5)
  positions = jnp.maximum(jnp.cumsum(mask, 1) - 1, 0)
  logits = backend.model(ids, attention_mask=mask, positions=positions)
  logp = np.asarray(jax.nn.log_softmax(logits[:, :-1], -1))
  chosen = np.take_along_axis(logp, np.asarray(ids)[:, 1:, None], -1)[..., 0]
  np.testing.assert_allclose(np.asarray(got[0])[:, 1:], chosen, rtol=1e-6, atol=1e-6)
  np.testing.assert_array_equal(np.asarray(got[1])[:, 1:], np.argsort(-logp, -1)[..., :3])
  np.testing.assert_allclose(np.asarray(got[2])[:, 1:], -np.sort(-logp, -1)[..., :3], rtol=1e-6,
                             atol=1e-6)
  assert (np.asarray(got[0]) <= 0).all() and (np.asarray(got[0])[:, 0] == 0).all()
