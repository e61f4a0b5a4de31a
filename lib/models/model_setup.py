"""The one way to get a model: the `model` config block and the builder every trainer, backend and
server calls.

Config block `model` (`lib.run.config_blocks.model_block(**fields)` fills the defaults, rejects
unknown fields):
  checkpoint  a local Hugging Face directory (config.json + safetensors, tokenizer files if it has
              them); "" = build `preset` from scratch
  preset      a `lib.models.PRESETS` name, of either family (architecture of a from-scratch model)
  overrides   dict of the preset's config fields (QwenConfig or Qwen35Config) to replace (from
              scratch only)
  dtype       "float32" | "bfloat16": the dtype the model computes in. Trainers keep float32
              master weights and cast on the fly (`lib.train.state.nnx_apply_fn`); inference
              backends load and run the weights in it.
  remat       per-layer rematerialisation of training forwards (`lib/models/remat.py`): "none",
              "full" (save only layer inputs; the paper-scale configs use it) or "dots"
  vocab_size  size of the byte-level BPE trained for a from-scratch model (when the caller has no
              tokenizer of its own but gives texts to train one on)

    block = model_block(checkpoint="path/to/Qwen3-0.6B")
    model, config, tok = build_model(block, seed=0)                    # tok: the checkpoint's own
    model, config, tok = build_model(model_block(), seed=0, tokenizer_texts=texts,
                                     tokenizer_dir=f"{workdir}/tokenizer")   # BPE trained here
"""
import os
from typing import Any, Sequence

import jax.numpy as jnp
from flax import nnx

from lib import models
from lib.models import tokenizer as tokenizer_lib
from lib.run.config_blocks import model_block

# Texts of the embedded default tokenizer (tests, demos, the tiny served model): the vocabulary
# of our text envs' prompts and replies, repeated so BPE sees every pair often enough.
TINY_CORPUS = [
    "You are an agent acting in a grid world. Observation: the player is at row 2, column 3. "
    "A box is to the left; the goal is below. Actions: up, down, left, right, noop. "
    "Reply with one action. Plan: move the box onto the goal. State: {\"player\": [2, 3]}. "
    "Range [0, 15]. Feedback: higher. lower. correct. Reply with one integer. I guess 7. "
    "The door is locked; pick up the key, open the door, go to the green goal square. "
    "Inventory: wood 2, stone 1. A zombie is nearby. 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15"
] * 4


def check_checkpoint(path: str) -> None:
  """Checks that `path` is a local Hugging Face checkpoint directory.

  Args:
    path: the `model.checkpoint` directory.
  Raises:
    FileNotFoundError: one line, when `path` has no config.json.
  """
  if not os.path.isfile(os.path.join(path, "config.json")):
    raise FileNotFoundError(f"model.checkpoint {path!r} is not a local Hugging Face directory "
                            "(no config.json there)")


def model_tokenizer(checkpoint: str, tokenizer=None):
  """The tokenizer of a model: a checkpoint brings its own (the directory's tokenizer.json), else
  `tokenizer`. The one place that decides it (`build_model` and the trainers that train a
  tokenizer only for a from-scratch model ask here).

  Args:
    checkpoint: the `model.checkpoint` directory, or "" (a from-scratch model).
    tokenizer: the tokenizer otherwise (possibly None).
  Returns:
    The checkpoint's tokenizer, or `tokenizer`.
  """
  if checkpoint and os.path.isfile(os.path.join(checkpoint, "tokenizer.json")):
    return tokenizer_lib.load_tokenizer(checkpoint)
  return tokenizer


def build_model(block: Any, *, seed: int, tokenizer=None,
                tokenizer_texts: Sequence[str] | None = None, tokenizer_dir: str | None = None,
                dtype: str = "float32"):
  """The model described by a `model` block, with its tokenizer.

  With `block.checkpoint`: the weights via `lib.models.load_pretrained` (no network) and the
  directory's own tokenizer when it has a tokenizer.json (else `tokenizer`, possibly None).
  Without: `lib.models.preset(block.preset, **block.overrides)` initialised from `seed`; if a
  tokenizer is given, or trained here on `tokenizer_texts` (byte-level BPE of `block.vocab_size`
  saved under `tokenizer_dir`), the vocabulary size, EOS and pad ids are the tokenizer's.

  Args:
    block: a `model` block (dict or ConfigDict, see `model_block`).
    seed: initialisation seed of a from-scratch model (`nnx.Rngs(seed)`).
    tokenizer: an existing tokenizer for a from-scratch model (e.g. a task-specific BPE).
    tokenizer_texts: texts to train a BPE on when there is neither checkpoint nor tokenizer.
    tokenizer_dir: where that BPE is saved (required with `tokenizer_texts`).
    dtype: dtype of the weights ("float32" for training: master weights; inference backends
      pass block.dtype).
  Returns:
    (model, model config, tokenizer or None).
  """
  block = model_block(**dict(block))   # validates the fields of a dict or ConfigDict
  checkpoint = block["checkpoint"]
  if checkpoint:
    check_checkpoint(checkpoint)
    model, config = models.load_pretrained(checkpoint, dtype=dtype)
    models.set_remat(model, block["remat"])
    return model, config, model_tokenizer(checkpoint, tokenizer)
  if tokenizer is None and tokenizer_texts is not None:
    if not tokenizer_dir:
      raise ValueError("build_model: tokenizer_texts needs a tokenizer_dir to save the BPE in")
    tokenizer = tokenizer_lib.train_tokenizer(list(tokenizer_texts),
                                              int(block["vocab_size"]), tokenizer_dir)
  fields = dict(block["overrides"])
  if tokenizer is not None:
    # The vocabulary is the tokenizer's; an override cannot make ids point outside the table.
    fields.update(vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id,
                  eos_token_ids=(tokenizer.convert_tokens_to_ids(tokenizer.eos_token),))
  config = models.preset(block["preset"], **fields)
  model = models.set_remat(models.build(config, rngs=nnx.Rngs(seed), dtype=dtype), block["remat"])
  return model, config, tokenizer


def compute_dtype(block: Any):
  """The `nnx_apply_fn` compute dtype of a `model` block.

  Args:
    block: a `model` block (dict or ConfigDict, see `model_block`).
  Returns:
    None for "float32" (no casting), else the jnp dtype (e.g. bfloat16) the float32 master
    weights are cast to on the fly.
  """
  dtype = model_block(**dict(block))["dtype"]
  return None if dtype == "float32" else jnp.dtype(dtype)
