"""Our Qwen2/Qwen3 against transformers' torch implementation on tiny random checkpoints that
transformers itself writes (bias + tied + GQA for Qwen2; q/k norm, head_dim != hidden/heads and an
untied head for Qwen3)."""
import copy
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import safetensors.numpy
import torch
import transformers
from flax import nnx

from lib import models

TINY = dict(vocab_size=96, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2)


# Jitted once per shape: eager dispatch would compile every primitive separately (much slower).
_logits = nnx.jit(lambda model, ids, mask: model(ids, mask))
_extend = nnx.jit(lambda model, ids, mask, cache: model.extend(ids, mask, cache))


def _hf_model(kind):
  torch.manual_seed(0 if kind == "qwen2" else 1)
  if kind == "qwen2":
    model = transformers.Qwen2ForCausalLM(transformers.Qwen2Config(
        **TINY, tie_word_embeddings=True, rope_parameters={"rope_type": "default", "rope_theta": 500.0}))
  else:
    model = transformers.Qwen3ForCausalLM(transformers.Qwen3Config(**TINY, head_dim=16,
                                                                   tie_word_embeddings=False))
  with torch.no_grad():  # non-trivial norms and biases so that a mis-mapped tensor shows up
    for name, p in model.named_parameters():
      p.copy_(1.0 + 0.3 * torch.randn_like(p) if "norm" in name else 0.3 * torch.randn_like(p))
  return model.eval()


@pytest.fixture(scope="module", params=["qwen2", "qwen3"])
def checkpoint(request, tmp_path_factory):
  model = _hf_model(request.param)
  path = tmp_path_factory.mktemp(request.param)
  model.save_pretrained(path)
  return request.param, model, path


def _batch(seed=0, vocab=96):
  rng = np.random.default_rng(seed)
  ids = rng.integers(0, vocab, (3, 9))
  mask = np.ones((3, 9), np.int64)
  mask[1, :4] = 0  # left padding
  mask[2, 7:] = 0  # right padding
  return ids, mask


def _hf_logits(model, ids, mask):
  positions = np.maximum(mask.cumsum(-1) - 1, 0)
  with torch.no_grad():
    out = model(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask),
                position_ids=torch.tensor(positions))
  return out.logits.float().numpy()


def test_config_reads_hf_fields(checkpoint):
  kind, hf_model, path = checkpoint
  _, config = models.load_pretrained(path)
  assert config.model_type == kind
  assert config.qkv_bias == (kind == "qwen2") and config.qk_norm == (kind == "qwen3")
  assert config.tie_word_embeddings == (kind == "qwen2")
  assert config.head_dim == (8 if kind == "qwen2" else 16)
  assert config.rope_theta == (500.0 if kind == "qwen2" else 10000.0)
  assert config.num_params() == sum(p.numel() for p in hf_model.parameters())


def test_logits_match_transformers_with_padding(checkpoint):
  _, hf_model, path = checkpoint
  model, _ = models.load_pretrained(path)
  ids, mask = _batch()
  ours = np.asarray(_logits(model, jnp.asarray(ids), jnp.asarray(mask)))
  ref = _hf_logits(hf_model, ids, mask)
  real = mask.astype(bool)
  assert np.abs(ours - ref)[real].max() <= 1e-4
  assert np.abs(ref).max() > 1.0  # the comparison is not between near-zero logits
  # No mask at all: default positions 0..T-1.
  with torch.no_grad():
    ref_full = hf_model(input_ids=torch.tensor(ids)).logits.numpy()
  assert np.abs(np.asarray(_logits(model, jnp.asarray(ids), None)) - ref_full).max() <= 1e-4


def test_left_padding_does_not_change_logits(checkpoint):
  _, _, path = checkpoint
  model, _ = models.load_pretrained(path)
  ids, mask = _batch()
  alone = np.asarray(_logits(model, jnp.asarray(ids[1:2, 4:]), None))
  padded = np.asarray(_logits(model, jnp.asarray(ids), jnp.asarray(mask)))[1:2, 4:]
  np.testing.assert_allclose(padded, alone, atol=1e-5)


def test_cache_extend_matches_full_forward(checkpoint):
  _, _, path = checkpoint
  model, _ = models.load_pretrained(path)
  ids, mask = _batch(seed=3)
  mask[2, :] = 1
  mask[:, -1] = 1  # left padded only, as the sampler uses it
  full = np.asarray(_logits(model, jnp.asarray(ids), jnp.asarray(mask)))
  cache = model.init_cache(3, 9)
  prefill, cache = _extend(model, jnp.asarray(ids[:, :6]), jnp.asarray(mask[:, :6]), cache)
  steps = [prefill]
  for t in range(6, 9):
    logits, cache = _extend(model, jnp.asarray(ids[:, t:t + 1]),
                            jnp.asarray(mask[:, t:t + 1]), cache)
    steps.append(logits)
  cached = np.concatenate([np.asarray(s) for s in steps], axis=1)
  real = mask.astype(bool)
  assert np.abs(cached - full)[real].max() <= 1e-5


def test_save_pretrained_round_trips_through_transformers(checkpoint, tmp_path):
  _, hf_model, path = checkpoint
  model, config = models.load_pretrained(path)
  models.save_pretrained(model, config, tmp_path)
  reloaded = transformers.AutoModelForCausalLM.from_pretrained(tmp_path).eval()
  assert type(reloaded) is type(hf_model)
  ids, mask = _batch(seed=1)
  real = mask.astype(bool)
  ours = np.asarray(_logits(model, jnp.asarray(ids), jnp.asarray(mask)))
  assert np.abs(_hf_logits(reloaded, ids, mask) - ours)[real].max() <= 1e-4
  # Ours -> ours is bit-exact.
  again, config_again = models.load_pretrained(tmp_path)
  assert config_again == config
  for a, b in zip(jax.tree.leaves(nnx.state(model)), jax.tree.leaves(nnx.state(again))):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_sharded_safetensors_index(checkpoint, tmp_path):
  _, hf_model, path = checkpoint
  model, config = models.load_pretrained(path)
  models.save_pretrained(model, config, tmp_path, max_shard_bytes=40_000)
  index = json.loads((tmp_path / "model.safetensors.index.json").read_text())
  assert len(set(index["weight_map"].values())) > 1
  reloaded, _ = models.load_pretrained(tmp_path)
  ids, mask = _batch(seed=2)
  np.testing.assert_array_equal(np.asarray(_logits(reloaded, jnp.asarray(ids), jnp.asarray(mask))),
                                np.asarray(_logits(model, jnp.asarray(ids), jnp.asarray(mask))))
  hf_reloaded = transformers.AutoModelForCausalLM.from_pretrained(tmp_path).eval()
  real = mask.astype(bool)
  assert np.abs(_hf_logits(hf_reloaded, ids, mask) - _hf_logits(hf_model, ids, mask))[real].max() < 1e-5


def test_bfloat16_load_is_close(checkpoint):
  _, hf_model, path = checkpoint
  model, _ = models.load_pretrained(path, dtype="bfloat16")
  assert all(x.dtype == jnp.bfloat16 for x in jax.tree.leaves(nnx.state(model)))
  ids, mask = _batch()
  ours = np.asarray(_logits(model, jnp.asarray(ids), jnp.asarray(mask)))
  ref = _hf_logits(hf_model, ids, mask)
  ref_bf16 = _hf_logits(copy.deepcopy(hf_model).to(torch.bfloat16), ids, mask)
  real = mask.astype(bool)
  # bfloat16 rounding differs between the two implementations; ours must be as close to the
  # float32 reference as transformers' own bfloat16 run is, within a small factor.
  ours_err, hf_err = np.abs(ours - ref)[real].max(), np.abs(ref_bf16 - ref)[real].max()
  assert ours_err <= 2 * hf_err + 1e-3


def test_bad_checkpoint_names_every_problem(checkpoint, tmp_path):
  kind, _, path = checkpoint
  tensors = safetensors.numpy.load_file(path / "model.safetensors")
  del tensors["model.layers.1.mlp.up_proj.weight"]
  del tensors["model.norm.weight"]
  tensors["model.layers.0.self_attn.extra.weight"] = np.zeros(3, np.float32)
  tensors["model.layers.0.mlp.down_proj.weight"] = np.zeros((5, 5), np.float32)
  safetensors.numpy.save_file(tensors, tmp_path / "model.safetensors", metadata={"format": "pt"})
  (tmp_path / "config.json").write_text((path / "config.json").read_text())
  with pytest.raises(ValueError) as err:
    models.load_pretrained(tmp_path)
  message = str(err.value)
  for needle in ("missing: model.layers.1.mlp.up_proj.weight", "missing: model.norm.weight",
                 "unexpected: model.layers.0.self_attn.extra.weight",
                 "shape mismatch: model.layers.0.mlp.down_proj.weight"):
    assert needle in message


def test_unsupported_config_is_rejected(checkpoint, tmp_path):
  _, _, path = checkpoint
  hf = json.loads((path / "config.json").read_text())
  with pytest.raises(ValueError, match="sliding-window"):
    models.QwenConfig.from_hf({**hf, "use_sliding_window": True})
  with pytest.raises(ValueError, match="yarn"):
    models.QwenConfig.from_hf({**hf, "rope_parameters": {"rope_type": "yarn", "factor": 4.0}})
  with pytest.raises(ValueError, match="model_type"):
    models.QwenConfig.from_hf({**hf, "model_type": "llama"})
