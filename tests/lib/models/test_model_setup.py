"""lib/models/model_setup.py: the one `model` block and builder (preset from scratch, local
checkpoint)."""
import jax
import numpy as np
import pytest
from flax import nnx

from lib import models
from lib.models import model_setup
from lib.run import config_blocks

SMALL = {"num_layers": 1, "hidden_size": 32, "intermediate_size": 64, "num_heads": 2,
         "num_kv_heads": 1, "head_dim": 16}


def _params(model):
  return [np.asarray(x) for x in jax.tree.leaves(nnx.state(model, nnx.Param))]


def test_model_block_fills_defaults_and_rejects_unknown_fields():
  block = config_blocks.model_block(checkpoint="some/dir")
  assert block == {"checkpoint": "some/dir", "preset": "qwen3-tiny", "overrides": {},
                   "dtype": "float32", "vocab_size": 384, "remat": "none"}
  with pytest.raises(KeyError,
                     match="valid: checkpoint, preset, overrides, dtype, vocab_size, remat"):
    config_blocks.model_block(hidden=32)
  with pytest.raises(ValueError, match="unknown remat policy 'al'; valid: none, full, dots"):
    config_blocks.model_block(remat="al")
  model, _, _ = model_setup.build_model({**block, "checkpoint": "", "remat": "full"}, seed=0)
  assert model.remat == "full"
  assert model_setup.compute_dtype(block) is None
  assert model_setup.compute_dtype({**block, "dtype": "bfloat16"}) == np.dtype("bfloat16")


def test_preset_path_is_seeded_and_takes_the_tokenizers_vocabulary(tmp_path):
  block = config_blocks.model_block(overrides=SMALL, vocab_size=300)
  a, config, tok = model_setup.build_model(block, seed=3)
  b, _, _ = model_setup.build_model(block, seed=3)
  c, _, _ = model_setup.build_model(block, seed=4)
  assert tok is None and config.num_layers == 1 and config == models.preset("qwen3-tiny", **SMALL)
  assert all(np.array_equal(x, y) for x, y in zip(_params(a), _params(b)))
  assert not all(np.array_equal(x, y) for x, y in zip(_params(a), _params(c)))
  texts = ["the box is left of the goal; go up, then right."] * 8
  model, config, tok = model_setup.build_model(block, seed=0, tokenizer_texts=texts,
                                               tokenizer_dir=str(tmp_path / "tok"))
  assert len(tok) == config.vocab_size == model.config.vocab_size
  assert config.eos_token_ids == (tok.eos_token_id,) and config.pad_token_id == tok.pad_token_id
  assert (tmp_path / "tok" / "tokenizer.json").exists()
  # A given tokenizer is used as it is (nothing is trained).
  _, again, same = model_setup.build_model(block, seed=0, tokenizer=tok)
  assert same is tok and again == config


def test_checkpoint_path_loads_weights_and_tokenizer(tmp_path):
  texts = ["You pick up the egg. The fridge is open."] * 8
  block = config_blocks.model_block(overrides=SMALL, vocab_size=300)
  model, config, tok = model_setup.build_model(block, seed=1, tokenizer_texts=texts,
                                               tokenizer_dir=str(tmp_path / "tok"))
  ckpt = tmp_path / "ckpt"
  models.save_pretrained(model, config, str(ckpt), tokenizer=tok)
  # The preset fields are ignored once a checkpoint is named.
  named = config_blocks.model_block(checkpoint=str(ckpt), overrides={"num_layers": 7})
  loaded, loaded_config, loaded_tok = model_setup.build_model(named, seed=99)
  assert loaded_config.num_layers == 1 and loaded_config.vocab_size == len(tok)
  assert loaded_tok.get_vocab() == tok.get_vocab()
  for x, y in zip(_params(model), _params(loaded)):
    np.testing.assert_array_equal(x, y)
  ids = np.asarray([tok.encode("the fridge is open", add_special_tokens=False)], np.int32)
  mask = np.ones_like(ids)
  np.testing.assert_allclose(np.asarray(loaded(ids, mask)), np.asarray(model(ids, mask)),
                             atol=1e-6)
  # A weights-only directory gives no tokenizer; a missing one is a one-line error.
  (ckpt / "tokenizer.json").unlink()
  assert model_setup.build_model({"checkpoint": str(ckpt)}, seed=0)[2] is None
  with pytest.raises(FileNotFoundError, match=r"^model.checkpoint '.*nowhere' is not a local "
                                              r"Hugging Face directory \(no config.json there\)$"):
    model_setup.build_model(config_blocks.model_block(checkpoint=str(tmp_path / "nowhere")), seed=0)
