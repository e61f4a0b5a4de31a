"""Qwen3.5 port against transformers' torch reference: logits, full-checkpoint loading, round trip,
and greedy generation through the shared sampler. Tiny random models, written by the tests."""
import json
import logging

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import safetensors.torch
import torch
import transformers
from flax import nnx

from lib import models
from lib.generate import sampling
from lib.models.qwen3_5.config import PRESETS, Qwen35Config
from lib.models.qwen3_5.model import Qwen35
from lib.models.qwen3_5.params import load_qwen3_5

TEXT = dict(vocab_size=96, hidden_size=32, intermediate_size=48, num_attention_heads=4,
            num_key_value_heads=2, head_dim=16, linear_num_key_heads=2, linear_num_value_heads=4,
            linear_key_head_dim=8, linear_value_head_dim=8, linear_conv_kernel_dim=4)
# Variant A: untied, a non-default layer pattern, partial RoPE 1/2. Variant B: tied, the default
# 3-linear-1-full pattern, attention biases, transformers' default partial RoPE (1/4).
VARIANTS = {
    "untied": dict(TEXT, num_hidden_layers=4, tie_word_embeddings=False,
                   layer_types=["linear_attention", "full_attention", "linear_attention",
                                "linear_attention"],
                   rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                                    "partial_rotary_factor": 0.5}),
    "tied": dict(TEXT, num_hidden_layers=4, tie_word_embeddings=True, attention_bias=True,
                 rope_parameters={"rope_type": "default", "rope_theta": 1e6,
                                  "partial_rotary_factor": 0.25}),
}


def _randomize(model, seed):
  """Every parameter drawn at a scale where a wrong formula moves the logits well past 1e-4
  (transformers' own init leaves the (1 + w) norms at w = 0 and the projections at std 0.02), yet
  small enough that float32 rounding stays far below it: with projections at 1/sqrt(fan_in) the
  float32 reference itself drifts ~1e-3 from a float64 run, at 0.5/sqrt(fan_in) ~1e-5."""
  gen = torch.Generator().manual_seed(seed)
  with torch.no_grad():
    for name, p in model.named_parameters():
      if name.endswith("A_log"):
        p.copy_(torch.empty(p.shape).uniform_(0.0, 1.5, generator=gen))
      elif name.endswith("linear_attn.norm.weight"):
        p.copy_(1.0 + 0.3 * torch.randn(p.shape, generator=gen))
      elif p.ndim == 1:  # zero-centred norms, dt_bias, biases
        p.copy_(0.3 * torch.randn(p.shape, generator=gen))
      elif name.endswith("conv1d.weight"):
        p.copy_(0.5 * torch.randn(p.shape, generator=gen))
      elif name.endswith("embed_tokens.weight"):
        p.copy_(torch.randn(p.shape, generator=gen))
      else:
        p.copy_(0.5 * torch.randn(p.shape, generator=gen) / p.shape[-1] ** 0.5)
  return model


def _write_hf(path, variant, seed=0):
  config = transformers.Qwen3_5TextConfig(**VARIANTS[variant])
  torch.manual_seed(seed)
  model = _randomize(transformers.Qwen3_5ForCausalLM(config), seed).eval()
  model.save_pretrained(path)
  return model


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
  """variant -> (directory, transformers model), each written once per module on first use."""
  written = {}

  def get(variant):
    if variant not in written:
      path = tmp_path_factory.mktemp(f"qwen3_5_{variant}")
      written[variant] = path, _write_hf(path, variant)
    return written[variant]
  return get


def _with_chunk(model, config, chunk):
  """The same weights with a different DeltaNet chunk length (the chunk is a static module field)."""
  fresh = Qwen35(config.replace(deltanet_chunk=chunk), rngs=nnx.Rngs(0))
  return nnx.merge(nnx.graphdef(fresh), nnx.state(model))


def _positions(mask):
  return np.maximum(np.cumsum(mask, axis=-1) - 1, 0)


def _torch_logits(model, ids, mask=None):
  ids_t = torch.as_tensor(np.asarray(ids), dtype=torch.long)
  kw = {}
  if mask is not None:
    kw = dict(attention_mask=torch.as_tensor(np.asarray(mask), dtype=torch.long),
              position_ids=torch.as_tensor(_positions(np.asarray(mask)), dtype=torch.long))
  with torch.no_grad():
    return model(input_ids=ids_t, **kw).logits.numpy()


@nnx.jit
def _forward(model, ids, mask):
  return model(ids, mask)


def _batch(seed, batch=2, length=80, pad=(0, 9), vocab=96):
  """Token ids and a left-padding mask: sequences longer than transformers' 64-token chunk."""
  ids = np.random.default_rng(seed).integers(0, vocab, (batch, length))
  mask = np.ones((batch, length), np.int32)
  for row, n in enumerate(pad):
    mask[row, :n] = 0
  return ids, mask


@pytest.mark.parametrize("variant,chunk", [("tied", 64), ("untied", 16)])
def test_logits_match_transformers(checkpoints, variant, chunk):
  path, hf_model = checkpoints(variant)
  model, config = load_qwen3_5(path)
  assert config.deltanet_chunk == 64
  model = _with_chunk(model, config, chunk)  # 80 tokens: 2 or 5 chunks
  ids, mask = _batch(0)
  ours = np.asarray(_forward(model, jnp.asarray(ids), jnp.asarray(mask)))
  want = _torch_logits(hf_model, ids, mask)
  real = mask.astype(bool)
  assert want[real].std() > 0.2  # the check below is not vacuous
  np.testing.assert_allclose(ours[real], want[real], atol=1e-4, rtol=0)
  # Left padding is invisible: the padded row equals the same tokens run alone.
  alone = np.asarray(_forward(model, jnp.asarray(ids[1:, 9:]), jnp.ones((1, 71), jnp.int32)))
  np.testing.assert_allclose(ours[1, 9:], alone[0], atol=1e-4, rtol=0)


def test_bfloat16_load_tracks_float32(checkpoints):
  """bfloat16 weights/activations (DeltaNet state kept in float32) stay near the float32 logits."""
  path, _ = checkpoints("untied")
  ids, mask = _batch(4, length=40, pad=(0, 3))
  logits = {}
  for dtype in ("float32", "bfloat16"):
    model, _ = load_qwen3_5(path, dtype=dtype)
    assert model.embed[...].dtype == jnp.dtype(dtype)
    logits[dtype] = np.asarray(_forward(model, jnp.asarray(ids), jnp.asarray(mask)))
  real = mask.astype(bool)
  err = np.abs(logits["bfloat16"] - logits["float32"])[real]
  assert np.isfinite(logits["bfloat16"]).all()
  assert err.mean() < 0.05 * np.abs(logits["float32"][real]).std(), err.mean()


def test_cached_steps_match_full_forward(checkpoints):
  """Prefill (chunked DeltaNet, KV cache) then one token at a time (recurrent step) == full pass."""
  path, _ = checkpoints("untied")
  model, config = load_qwen3_5(path)
  model = _with_chunk(model, config, 8)
  ids, mask = _batch(1, length=24, pad=(0, 5))
  full = np.asarray(_forward(model, jnp.asarray(ids), jnp.asarray(mask)))
  extend = nnx.jit(lambda m, i, k, c: m.extend(i, k, c))
  cache = model.init_cache(2, 24)
  logits, cache = extend(model, jnp.asarray(ids[:, :19]), jnp.asarray(mask[:, :19]), cache)
  steps = [np.asarray(logits)]
  for t in range(19, 24):
    logits, cache = extend(model, jnp.asarray(ids[:, t:t + 1]), jnp.asarray(mask[:, t:t + 1]), cache)
    steps.append(np.asarray(logits))
  real = mask.astype(bool)
  np.testing.assert_allclose(np.concatenate(steps, axis=1)[real], full[real], atol=1e-4, rtol=0)


def test_greedy_sampler_equals_stepwise_argmax(checkpoints):
  path, hf_model = checkpoints("tied")
  model, config = load_qwen3_5(path)
  model = _with_chunk(model, config, 8)  # the 32-token prefill bucket spans 4 chunks
  prompts = [list(range(3, 23)), [5, 7, 11, 13, 17]]
  new = 6
  ids, mask = sampling.left_pad(prompts)
  graphdef, state = nnx.split(model)
  out = sampling.generate(graphdef, state, ids, mask, jax.random.key(0), max_new_tokens=new,
                          temperature=0.0)
  # Argmax of the full, uncached forward, one token at a time; sequences left-padded to one
  # fixed width (padding is invisible, see above) so this compiles once.
  seqs = [list(p) for p in prompts]
  width = max(map(len, prompts)) + new
  for _ in range(new):
    ids, mask = sampling.left_pad(seqs, length=width)
    logits = _forward(model, jnp.asarray(ids), jnp.asarray(mask))
    for seq, token in zip(seqs, np.asarray(jnp.argmax(logits[:, -1], axis=-1))):
      seq.append(int(token))
  for row, prompt in enumerate(prompts):
    assert np.asarray(out.tokens[row]).tolist() == seqs[row][len(prompt):]
  # transformers' own greedy decoding (its cache, recurrent step) picks the same tokens.
  with torch.no_grad():
    hf = hf_model.generate(torch.as_tensor([prompts[0]]), max_new_tokens=6, do_sample=False)
  assert hf[0, len(prompts[0]):].tolist() == np.asarray(out.tokens[0]).tolist()


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_save_round_trips_into_transformers(checkpoints, variant, tmp_path):
  """Through the shared entry points, which dispatch on model_type / config type."""
  path, hf_model = checkpoints(variant)
  model, config = models.load_pretrained(path)
  assert isinstance(model, Qwen35)
  models.save_pretrained(model, config, tmp_path / "out", max_shard_bytes=20_000)  # several shards
  assert (tmp_path / "out" / "model.safetensors.index.json").exists()
  reloaded = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "out").eval()
  assert type(reloaded).__name__ == "Qwen3_5ForCausalLM"
  assert reloaded.config.layer_types == hf_model.config.layer_types
  ids, mask = _batch(2)
  real = mask.astype(bool)
  np.testing.assert_allclose(_torch_logits(reloaded, ids, mask)[real],
                             _torch_logits(hf_model, ids, mask)[real], atol=1e-6, rtol=0)
  again, config_again = load_qwen3_5(tmp_path / "out")
  assert config_again == config


def test_full_checkpoint_loads_text_decoder_and_skips_vision(tmp_path, caplog):
  text = transformers.Qwen3_5TextConfig(**VARIANTS["tied"])
  vision = dict(depth=1, hidden_size=16, intermediate_size=32, num_heads=2, patch_size=2,
                temporal_patch_size=1, spatial_merge_size=2, out_hidden_size=32,
                num_position_embeddings=4)
  config = transformers.Qwen3_5Config(text_config=text.to_dict(), vision_config=vision,
                                      tie_word_embeddings=True)
  torch.manual_seed(0)
  full = _randomize(transformers.Qwen3_5ForConditionalGeneration(config), 1).eval()
  full.save_pretrained(tmp_path)
  # Released checkpoints also carry a multi-token-prediction head under `mtp.`.
  weights = safetensors.torch.load_file(tmp_path / "model.safetensors")
  assert any(k.startswith("model.language_model.") for k in weights)
  n_visual = sum(k.startswith("model.visual.") for k in weights)
  assert n_visual > 0
  weights["mtp.fc.weight"] = torch.zeros(32, 64)
  safetensors.torch.save_file(weights, tmp_path / "model.safetensors", metadata={"format": "pt"})
  with caplog.at_level(logging.INFO, logger="lib.models.qwen3_5.params"):
    model, ours_config = load_qwen3_5(tmp_path)
  notes = " ".join(r.getMessage() for r in caplog.records)
  assert f"skipped {n_visual} tensors under 'model.visual.'" in notes
  assert "skipped 1 tensors under 'mtp.'" in notes
  assert ours_config.tie_word_embeddings and ours_config.layer_types == tuple(text.layer_types)
  ids = np.random.default_rng(3).integers(0, 96, (1, 70))
  ours = np.asarray(_forward(model, jnp.asarray(ids), jnp.ones((1, 70), jnp.int32)))
  np.testing.assert_allclose(ours, _torch_logits(full, ids), atol=1e-4, rtol=0)


def test_bad_checkpoint_names_every_problem(tmp_path):
  _write_hf(tmp_path, "untied")
  weights = safetensors.torch.load_file(tmp_path / "model.safetensors")
  del weights["model.layers.0.linear_attn.A_log"]
  weights["model.layers.0.linear_attn.extra"] = torch.zeros(3)
  weights["model.layers.1.self_attn.q_proj.weight"] = torch.zeros(7, 32)
  safetensors.torch.save_file(weights, tmp_path / "model.safetensors", metadata={"format": "pt"})
  with pytest.raises(ValueError) as err:
    load_qwen3_5(tmp_path)
  message = str(err.value)
  assert "missing: model.layers.0.linear_attn.A_log" in message
  assert "unexpected: model.layers.0.linear_attn.extra" in message
  assert "shape mismatch: model.layers.1.self_attn.q_proj.weight" in message


def test_config_maps_both_layouts_and_rejects_unknown_features():
  text = dict(VARIANTS["untied"], model_type="qwen3_5_text")
  config = Qwen35Config.from_hf(text)
  assert config.rotary_dim == 8 and config.layer_types[1] == "full_attention"
  assert Qwen35Config.from_hf(config.to_hf()) == config
  nested = {"model_type": "qwen3_5", "tie_word_embeddings": True,
            "text_config": dict(text, tie_word_embeddings=False), "vision_config": {}}
  assert Qwen35Config.from_hf(nested) == config.replace(tie_word_embeddings=True)
  defaults = Qwen35Config.from_hf({"model_type": "qwen3_5_text", "num_hidden_layers": 8})
  assert defaults.layer_types == ("linear_attention",) * 3 + ("full_attention",) + (
      "linear_attention",) * 3 + ("full_attention",)
  assert defaults.partial_rotary_factor == 0.25  # transformers' default
  with pytest.raises(ValueError, match="rope type"):
    Qwen35Config.from_hf(dict(text, rope_parameters={"rope_type": "yarn", "factor": 4.0}))
  with pytest.raises(ValueError, match="layer_types"):
    Qwen35Config.from_hf(dict(text, layer_types=["linear_attention"]))
  with pytest.raises(ValueError, match="model_type"):
    Qwen35Config.from_hf({"model_type": "qwen3"})
  json.dumps(config.to_hf())  # serialisable as written


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_preset_parameter_count(name):
  config = PRESETS[name]
  abstract = nnx.eval_shape(lambda: Qwen35(config, rngs=nnx.Rngs(0)))
  assert config.num_params() == sum(x.size for x in jax.tree.leaves(nnx.state(abstract, nnx.Param)))
