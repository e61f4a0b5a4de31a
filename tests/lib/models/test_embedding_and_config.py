"""Embedding head against transformers' Qwen3Model (backbone-only checkpoint, no "model." prefix),
presets, config round trips and the token log-prob helper."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch
import transformers
from flax import nnx

from lib import models


@pytest.fixture(scope="module")
def backbone(tmp_path_factory):
  torch.manual_seed(2)
  config = transformers.Qwen3Config(vocab_size=80, hidden_size=32, intermediate_size=48,
                                    num_hidden_layers=2, num_attention_heads=4,
                                    num_key_value_heads=2, head_dim=16, tie_word_embeddings=True)
  hf = transformers.Qwen3Model(config)
  with torch.no_grad():
    for name, p in hf.named_parameters():
      p.copy_(1.0 + 0.3 * torch.randn_like(p) if "norm" in name else 0.3 * torch.randn_like(p))
  path = tmp_path_factory.mktemp("embedding")
  hf.save_pretrained(path)
  return hf.eval(), path


def test_embedding_matches_transformers_last_token_pooling(backbone):
  hf, path = backbone
  model, _ = models.load_pretrained(path)
  ids = np.random.default_rng(0).integers(0, 80, (2, 7))
  mask = np.ones((2, 7), np.int64)
  mask[1, :3] = 0
  with torch.no_grad():
    hidden = hf(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask),
                position_ids=torch.tensor(np.maximum(mask.cumsum(-1) - 1, 0))).last_hidden_state
  ref = torch.nn.functional.normalize(hidden[:, -1], dim=-1).numpy()
  ours = np.asarray(nnx.jit(models.embed)(model, jnp.asarray(ids), jnp.asarray(mask)))
  np.testing.assert_allclose(ours, ref, atol=1e-5)
  np.testing.assert_allclose(np.linalg.norm(ours, axis=-1), 1.0, atol=1e-6)


def test_embedding_same_for_left_and_right_padding(backbone):
  _, path = backbone
  model, _ = models.load_pretrained(path)
  tokens = [5, 9, 33, 2]
  left = np.array([[0, 0, *tokens]]), np.array([[0, 0, 1, 1, 1, 1]])
  right = np.array([[*tokens, 0, 0]]), np.array([[1, 1, 1, 1, 0, 0]])
  embed = nnx.jit(models.embed)
  np.testing.assert_allclose(np.asarray(embed(model, *map(jnp.asarray, left))),
                             np.asarray(embed(model, *map(jnp.asarray, right))), atol=1e-5)
  assert models.last_token_index(jnp.asarray(right[1])).tolist() == [3]


@pytest.mark.parametrize("name", sorted(n for n, c in models.PRESETS.items()
                                         if isinstance(c, models.QwenConfig)))
def test_presets_round_trip_through_hf_config(name):
  config = models.preset(name)
  assert models.QwenConfig.from_hf(config.to_hf()) == config
  hf_class = transformers.Qwen2Config if config.model_type == "qwen2" else transformers.Qwen3Config
  hf = hf_class(**{k: v for k, v in config.to_hf().items() if k not in ("architectures", "model_type")})
  assert models.QwenConfig.from_hf(hf.to_dict()) == config


def test_num_params_counts_the_built_model():
  for name in ("qwen2-tiny", "qwen3-tiny", "qwen3-20m"):
    config = models.preset(name)
    abstract = nnx.eval_shape(lambda: models.build(config))
    assert config.num_params() == sum(x.size for x in jax.tree.leaves(nnx.state(abstract)))
  assert 18e6 < models.preset("qwen3-20m").num_params() < 22e6
  assert 5.9e8 < models.preset("qwen3-0.6b").num_params() < 6.1e8


def test_sequence_token_logprobs_match_log_softmax_of_logits():
  model = models.build(models.preset("qwen3-tiny"), rngs=nnx.Rngs(3))
  ids = jnp.asarray(np.random.default_rng(1).integers(0, 128, (2, 6)))
  mask = jnp.asarray([[0, 0, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1]])
  logp = np.asarray(nnx.jit(models.sequence_token_logprobs)(model, ids, mask))
  logits = np.asarray(nnx.jit(lambda m, x, k: m(x, k))(model, ids, mask), np.float64)
  ref = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
  expected = np.take_along_axis(ref[:, :-1], np.asarray(ids)[:, 1:, None], -1)[..., 0]
  expected[0, :2] = 0.0  # target or its context is padding
  np.testing.assert_allclose(logp, expected, atol=1e-5)
