"""`load_pretrained` refuses checkpoints whose config.json contradicts the weights, and every file or
config error names the file (and the field): checkpoints written by `save_pretrained`, then damaged.
"""
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import safetensors.numpy
from flax import nnx

from lib import models


def _save(path, config, seed=0):
  model = models.build(config, rngs=nnx.Rngs(seed))
  models.save_pretrained(model, config, path)
  return model


def _edit_config(path, **changes):
  hf = json.loads((path / "config.json").read_text())
  for key, value in changes.items():
    if value is None:
      hf.pop(key, None)
    else:
      hf[key] = value
  (path / "config.json").write_text(json.dumps(hf))


def _edit_weights(path, edit):
  tensors = safetensors.numpy.load_file(path / "model.safetensors")
  edit(tensors)
  safetensors.numpy.save_file(tensors, path / "model.safetensors", metadata={"format": "pt"})


def _load_error(path) -> str:
  with pytest.raises(models.WeightsError) as err:
    models.load_pretrained(path)
  assert isinstance(err.value, ValueError)  # callers that catch ValueError keep working
  return str(err.value)


def test_tied_config_refuses_a_different_lm_head(tmp_path):
  _save(tmp_path, models.preset("qwen3-tiny"))  # untied: lm_head.weight differs from the embedding
  _edit_config(tmp_path, tie_word_embeddings=True)
  message = _load_error(tmp_path)
  assert message.startswith(f"{tmp_path / 'config.json'}: tie_word_embeddings is true")
  assert f"{tmp_path / 'model.safetensors'} stores a lm_head.weight that differs" in message


def test_tied_config_accepts_an_lm_head_equal_to_the_embedding(tmp_path):
  model = _save(tmp_path, models.preset("qwen2-tiny"))  # tied: no lm_head.weight written
  _edit_weights(tmp_path, lambda t: t.update({"lm_head.weight": t["model.embed_tokens.weight"]}))
  loaded, config = models.load_pretrained(tmp_path)
  assert config.tie_word_embeddings and loaded.lm_head is None
  ids = jnp.arange(12, dtype=jnp.int32).reshape(2, 6)
  np.testing.assert_array_equal(np.asarray(loaded(ids)), np.asarray(model(ids)))


def test_untied_config_refuses_weights_without_lm_head(tmp_path):
  _save(tmp_path, models.preset("qwen2-tiny"))
  _edit_config(tmp_path, tie_word_embeddings=False)
  message = _load_error(tmp_path)
  assert message.startswith(f"{tmp_path / 'config.json'}: tie_word_embeddings is false, but "
                            f"{tmp_path / 'model.safetensors'} has no lm_head.weight")


def test_vocab_size_must_match_the_embedding(tmp_path):
  _save(tmp_path, models.preset("qwen3-tiny"))
  _edit_config(tmp_path, vocab_size=200)
  message = _load_error(tmp_path)
  assert message == (f"{tmp_path / 'config.json'}: vocab_size is 200, but "
                     f"{tmp_path / 'model.safetensors'} stores model.embed_tokens.weight with "
                     f"128 rows")


@pytest.mark.parametrize("layers", [1, 3])
def test_layer_count_must_match_the_weights(tmp_path, layers):
  _save(tmp_path, models.preset("qwen3-tiny"))  # 2 layers
  _edit_config(tmp_path, num_hidden_layers=layers)
  message = _load_error(tmp_path)
  assert message == (f"{tmp_path / 'config.json'}: num_hidden_layers is {layers}, but "
                     f"{tmp_path / 'model.safetensors'} holds 2 layers (0-1)")


def test_qwen3_5_nested_config_names_the_text_config_field(tmp_path):
  _save(tmp_path, models.preset("qwen3.5-tiny"))  # 4 layers
  text = json.loads((tmp_path / "config.json").read_text())
  text.pop("layer_types")  # recomputed from num_hidden_layers
  nested = {"model_type": "qwen3_5", "tie_word_embeddings": False,
            "text_config": dict(text, num_hidden_layers=8)}
  (tmp_path / "config.json").write_text(json.dumps(nested))
  message = _load_error(tmp_path)
  assert message.startswith(f"{tmp_path / 'config.json'}: text_config.num_hidden_layers is 8, "
                            f"but {tmp_path / 'model.safetensors'} holds 4 layers (0-3)")


def test_qwen3_5_tied_config_refuses_a_different_lm_head(tmp_path):
  _save(tmp_path, models.preset("qwen3.5-tiny"))  # untied
  _edit_config(tmp_path, tie_word_embeddings=True)
  assert "tie_word_embeddings is true" in _load_error(tmp_path)


@pytest.mark.parametrize("field", ["hidden_size", "vocab_size", "num_hidden_layers",
                                   "num_attention_heads", "intermediate_size"])
def test_missing_config_field_is_named(tmp_path, field):
  _save(tmp_path, models.preset("qwen3-tiny"))
  _edit_config(tmp_path, **{field: None})
  assert _load_error(tmp_path) == f"{tmp_path / 'config.json'}: missing field {field!r}"


def test_unreadable_config_is_named(tmp_path):
  assert _load_error(tmp_path) == f"{tmp_path / 'config.json'}: no such file"
  (tmp_path / "config.json").write_text('{"model_type": "qwen3",')
  assert _load_error(tmp_path).startswith(f"{tmp_path / 'config.json'}: not valid JSON")
  (tmp_path / "config.json").write_text('{"model_type": "llama"}')
  assert _load_error(tmp_path).startswith(f"{tmp_path / 'config.json'}: model_type 'llama'")


@pytest.mark.parametrize("keep_bytes", [6, 200, -64])
def test_truncated_safetensors_is_named(tmp_path, keep_bytes):
  """Cut inside the header length, inside the header, and inside the tensor data."""
  _save(tmp_path, models.preset("qwen3-tiny"))
  file = tmp_path / "model.safetensors"
  data = file.read_bytes()
  file.write_bytes(data[:keep_bytes])
  assert _load_error(tmp_path).startswith(f"{file}: cannot read (")


def test_missing_weights_and_shards_are_named(tmp_path):
  model = models.build(models.preset("qwen3-tiny"))
  models.save_pretrained(model, models.preset("qwen3-tiny"), tmp_path, max_shard_bytes=20_000)
  index = tmp_path / "model.safetensors.index.json"
  shard = sorted(tmp_path.glob("model-*.safetensors"))[-1]
  shard.unlink()
  assert _load_error(tmp_path) == f"{index}: weight_map names {shard.name}, which does not exist"
  index.write_text(json.dumps({"metadata": {}}))
  assert _load_error(tmp_path) == f"{index}: missing field 'weight_map'"
  index.unlink()
  for leftover in tmp_path.glob("model-*.safetensors"):
    leftover.unlink()
  assert _load_error(tmp_path) == (f"{tmp_path}: holds neither model.safetensors nor "
                                   f"model.safetensors.index.json")


def test_sharded_round_trip_after_checks(tmp_path):
  """The checks read headers of every shard: a valid sharded checkpoint still loads exactly."""
  model = models.build(models.preset("qwen3-tiny"), rngs=nnx.Rngs(3))
  models.save_pretrained(model, models.preset("qwen3-tiny"), tmp_path, max_shard_bytes=20_000)
  loaded, _ = models.load_pretrained(tmp_path)
  for a, b in zip(jax.tree.leaves(nnx.state(model)), jax.tree.leaves(nnx.state(loaded))):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
