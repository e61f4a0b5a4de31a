"""The papers' model presets have their published sizes: parameters counted on the abstract model
(`nnx.eval_shape`, nothing allocated), against the totals on the models' Hugging Face pages."""
import jax
import numpy as np
import pytest
from flax import nnx

from lib import models

# Published totals (Hugging Face model cards / safetensors metadata), in billions.
PUBLISHED_B = {
    "qwen2.5-7b": 7.62,
    "qwen3-8b": 8.19,
    "qwen3-32b": 32.8,
    "qwen3-embedding-8b": 7.57,   # the checkpoint's tensors (no lm_head); the card rounds to "8B"
}


def _abstract_count(config) -> int:
  model = nnx.eval_shape(lambda: models.build(config, rngs=nnx.Rngs(0)))
  return sum(int(np.prod(x.shape)) for x in jax.tree.leaves(nnx.state(model, nnx.Param)))


@pytest.mark.parametrize("name", sorted(PUBLISHED_B))
def test_paper_preset_matches_published_parameter_count(name):
  config = models.preset(name)
  count = _abstract_count(config)
  assert count == config.num_params()
  assert abs(count / 1e9 - PUBLISHED_B[name]) / PUBLISHED_B[name] < 0.01, count


def test_qwen3_5_0_8b_text_decoder_size():
  # The card's 0.8B includes the vision tower; the text decoder alone is 0.75B.
  config = models.preset("qwen3.5-0.8b")
  count = _abstract_count(config)
  assert count == config.num_params()
  assert 0.70e9 < count < 0.80e9, count


def test_paper_presets_have_published_shapes():
  q7, q8, q32 = models.preset("qwen2.5-7b"), models.preset("qwen3-8b"), models.preset("qwen3-32b")
  assert (q7.hidden_size, q7.num_layers, q7.num_heads, q7.num_kv_heads, q7.intermediate_size,
          q7.vocab_size, q7.tie_word_embeddings, q7.qkv_bias) == (
              3584, 28, 28, 4, 18944, 152064, False, True)
  assert (q8.hidden_size, q8.num_layers, q8.num_kv_heads, q8.head_dim) == (4096, 36, 8, 128)
  assert (q32.hidden_size, q32.num_layers, q32.num_heads, q32.intermediate_size) == (
      5120, 64, 64, 25600)
  emb = models.preset("qwen3-embedding-8b")
  assert (emb.hidden_size, emb.num_layers, emb.vocab_size) == (4096, 36, 151665)
