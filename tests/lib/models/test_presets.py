"""lib/models/presets.py: one preset table for both families. Every preset, shrunk to a tiny size
(its own switches kept: biases, tying, q/k norm, partial RoPE), is built by the one builder
(`lib.models.model_setup.build_model`), runs a forward pass and is planned by `lib.plan.memory_plan`
with the parameter count of the model actually built."""
import jax
import ml_collections
import numpy as np
import pytest
from flax import nnx

from configs import paper_scale
from lib import models
from lib.models import model_setup
from lib.models.presets import merged_presets
from lib.models.qwen3_5.config import FULL, LINEAR
from lib.plan import memory_plan
from lib.run import config_blocks

# Per family: the fields that make any of its presets tiny (2 layers, hidden 32, vocab 64).
TINY = {
    models.QwenConfig: dict(vocab_size=64, hidden_size=32, intermediate_size=64, num_layers=2,
                            num_heads=2, num_kv_heads=1, head_dim=16),
    models.Qwen35Config: dict(vocab_size=64, hidden_size=32, intermediate_size=64, num_layers=2,
                              layer_types=(LINEAR, FULL), num_heads=2, num_kv_heads=1,
                              head_dim=16, linear_num_key_heads=2, linear_num_value_heads=4,
                              linear_key_head_dim=8, linear_value_head_dim=8),
}
MODEL_CLASS = {models.QwenConfig: models.Qwen, models.Qwen35Config: models.Qwen35}


def _tiny_block(name: str, **fields) -> dict:
  return config_blocks.model_block(preset=name, overrides=TINY[type(models.PRESETS[name])],
                                   **fields)


def _param_count(model) -> int:
  return sum(int(np.prod(x.shape)) for x in jax.tree.leaves(nnx.state(model, nnx.Param)))


def _forward_4_tokens(model, vocab_size: int) -> np.ndarray:
  ids = jax.numpy.asarray(np.random.default_rng(0).integers(0, vocab_size, (1, 4)), jax.numpy.int32)
  return np.asarray(model(ids, jax.numpy.ones_like(ids)))


def test_one_table_holds_both_families():
  names = set(models.PRESETS)
  assert {"qwen2.5-7b", "qwen3-8b", "qwen3-tiny", "qwen3.5-0.8b", "qwen3.5-tiny"} <= names
  assert isinstance(models.preset("qwen3.5-tiny"), models.Qwen35Config)
  assert isinstance(models.preset("qwen2-tiny"), models.QwenConfig)
  assert models.preset("qwen3.5-tiny", vocab_size=300).vocab_size == 300
  with pytest.raises(KeyError, match="unknown preset 'qwen4'; valid: .*qwen3.5-tiny"):
    models.preset("qwen4")
  with pytest.raises(TypeError):
    models.PRESETS["qwen3-tiny"] = models.preset("qwen2-tiny")   # a read-only view


def test_a_name_in_two_families_raises():
  qwen, qwen3_5 = models.preset("qwen3-tiny"), models.preset("qwen3.5-tiny")
  assert list(merged_presets({"a": qwen}, {"b": qwen3_5})) == ["a", "b"]
  with pytest.raises(ValueError, match="preset 'a' is defined twice .QwenConfig and Qwen35Config"):
    merged_presets({"a": qwen}, {"a": qwen3_5})


@pytest.mark.parametrize("name", sorted(models.PRESETS))
def test_every_preset_builds_runs_and_plans_its_real_parameter_count(name):
  block = _tiny_block(name)
  model, config, tok = model_setup.build_model(block, seed=0)
  assert tok is None and isinstance(model, MODEL_CLASS[type(models.PRESETS[name])])
  assert config == models.preset(name, **block["overrides"])
  logits = _forward_4_tokens(model, config.vocab_size)
  assert logits.shape == (1, 4, config.vocab_size) and np.isfinite(logits).all()
  c = ml_collections.ConfigDict()
  c.model = block
  c.plan = dict(trainer="sft", rows=1, seq_len=4, compile=False)
  plan = memory_plan.compute(c)
  count = _param_count(model)
  assert plan.breakdown["params"] == 4 * count        # float32 master weights, one device
  assert count == config.num_params()
  assert memory_plan.arch_config(block) == config


def test_paper_scale_qwen3_5_from_scratch_goes_through_build_model():
  c = ml_collections.ConfigDict()
  c.model = config_blocks.model_block()
  paper_scale.apply(c, "gencoord")
  assert not c.model.checkpoint and c.model.preset == "qwen3.5-0.8b"
  block = {**dict(c.model), "overrides": TINY[models.Qwen35Config]}
  model, config, _ = model_setup.build_model(block, seed=0, dtype=c.model.dtype)
  assert isinstance(model, models.Qwen35) and model.remat == "full"
  full = models.preset("qwen3.5-0.8b")
  assert (config.rope_theta, config.partial_rotary_factor, config.tie_word_embeddings) == (
      full.rope_theta, full.partial_rotary_factor, full.tie_word_embeddings)
  assert np.isfinite(_forward_4_tokens(model, config.vocab_size)).all()
