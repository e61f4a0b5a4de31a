"""Hugging Face safetensors <-> Qwen2/Qwen2.5/Qwen3 parameters: one key table used both ways.

Load: `nnx.eval_shape` builds the model without allocating -> `lib.models.safetensors_io` maps every
tensor of `model.safetensors` (or of a sharded index) through `key_table(config)`, transposing
torch's `Linear.weight` [out, in] into our kernels [in, out] and joining the projections our model
fuses (q/k/v, gate/up: `lib.models.layers.FusedDense`), checks shapes, casts -> `nnx.merge`. Saving
splits them again, so the checkpoint keys and shapes are transformers' own.

Before any tensor is read, `decoder_check` holds config.json to what the weights say (shared with
Qwen3.5, whose model is a `Qwen` with another layer stack): `tie_word_embeddings` against the
presence of `lm_head.weight`, `vocab_size` against the embedding's rows, `num_hidden_layers`
against the layer indices. A contradiction is a `WeightsError` naming config.json and the field.
"""
import re
from pathlib import Path

import jax.numpy as jnp
import numpy as np
from flax import nnx

from lib.models import safetensors_io
from lib.models.attention import qkv_columns
from lib.models.key_table import AS_IS, TRANSPOSED, Fused, KeyTable, Layout
from lib.models.layers import MLP, group_columns, split_columns
from lib.models.qwen.config import QwenConfig
from lib.models.qwen.model import Qwen
from lib.models.safetensors_io import CONFIG_FILE, WeightsError


def fused_columns(parts: tuple[str, ...], part: Layout,
                  columns: tuple[tuple[int, ...], int]) -> Fused:
  """The layout of a `FusedDense` parameter whose parts are separate checkpoint tensors.

  Args:
    parts: the checkpoint keys' `{p}` values, in the fused columns' order, e.g. ("q", "k", "v").
    part: each tensor's own layout (TRANSPOSED for a Linear.weight, AS_IS for a bias).
    columns: (widths, groups) of the FusedDense (e.g. `MLP.gate_up_columns(config)`).
  Returns:
    A Fused layout that joins with `group_columns` and splits with `split_columns`.
  """
  widths, groups = columns
  return Fused(f"{'/'.join(parts)} fused, {groups} column group(s)", parts, part,
               join=lambda xs: group_columns(xs, groups),
               split=lambda x: split_columns(x, widths, groups))


def decoder_rows(config, query_width: int) -> tuple:
  """The key-table rows both families share: embedding, softmax attention, MLP, layer norms, final
  norm, head. Fused rows (q/k/v, gate/up) come before the generic `{p}` rows that take the rest
  (o_proj, down_proj, the q/k norms).

  Args:
    config: a QwenConfig or Qwen35Config.
    query_width: columns per query head of the fused q/k/v (`lib.models.attention.qkv_columns`).
  Returns:
    (Hugging Face key, our parameter path, layout) rows; `{i}` is a layer index, `{p}` a
    projection name.
  """
  qkv = qkv_columns(config, query_width)
  return (
      ("model.embed_tokens.weight", "embed", AS_IS),
      ("model.layers.{i}.self_attn.{p}_proj.weight", "layers.{i}.attn.qkv_proj.kernel",
       fused_columns(("q", "k", "v"), TRANSPOSED, qkv)),
      ("model.layers.{i}.self_attn.{p}_proj.bias", "layers.{i}.attn.qkv_proj.bias",
       fused_columns(("q", "k", "v"), AS_IS, qkv)),
      ("model.layers.{i}.self_attn.{p}_proj.weight", "layers.{i}.attn.{p}_proj.kernel", TRANSPOSED),
      ("model.layers.{i}.self_attn.{p}_proj.bias", "layers.{i}.attn.{p}_proj.bias", AS_IS),
      ("model.layers.{i}.self_attn.{p}_norm.weight", "layers.{i}.attn.{p}_norm.scale", AS_IS),
      ("model.layers.{i}.mlp.{p}_proj.weight", "layers.{i}.mlp.gate_up_proj.kernel",
       fused_columns(("gate", "up"), TRANSPOSED, MLP.gate_up_columns(config))),
      ("model.layers.{i}.mlp.{p}_proj.weight", "layers.{i}.mlp.{p}_proj.kernel", TRANSPOSED),
      ("model.layers.{i}.input_layernorm.weight", "layers.{i}.input_norm.scale", AS_IS),
      ("model.layers.{i}.post_attention_layernorm.weight", "layers.{i}.post_attn_norm.scale",
       AS_IS),
      ("model.norm.weight", "final_norm.scale", AS_IS),
      ("lm_head.weight", "lm_head.kernel", TRANSPOSED),
  )


def key_table(config: QwenConfig) -> KeyTable:
  """The Hugging Face key table of a Qwen2/Qwen3 of `config` (`decoder_rows`, one query head =
  head_dim columns)."""
  return KeyTable(decoder_rows(config, config.head_dim))


_LAYER_INDEX = re.compile(r"layers\.(\d+)\.")


def _index_ranges(indices) -> str:
  """{0, 1, 2, 5} -> '0-2, 5'."""
  runs, ordered = [], sorted(indices)
  for i in ordered:
    if runs and i == runs[-1][1] + 1:
      runs[-1][1] = i
    else:
      runs.append([i, i])
  return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def decoder_check(config, path, field_prefix: str = ""):
  """The config-against-weights check that `safetensors_io.load_params` runs on the headers.

  Args:
    config: a QwenConfig or Qwen35Config (vocab_size, num_layers, tie_word_embeddings).
    path: the checkpoint directory (for the messages).
    field_prefix: where the decoder's fields sit in config.json ("text_config." when nested).

  Returns:
    `{our key: TensorRef} -> {our key: TensorRef}`: raises a WeightsError naming config.json and
    the field that the weights contradict; drops an `lm_head.weight` that a tied checkpoint stores
    as an exact copy of the embedding (the same matrix twice changes nothing).
  """
  config_file = Path(path) / CONFIG_FILE

  def check(found: dict) -> dict:
    embed, head = found.get("embed"), found.get("lm_head.kernel")
    weights = safetensors_io.weights_source(path)
    if embed is not None and embed.shape[0] != config.vocab_size:
      raise WeightsError(
          f"{config_file}: {field_prefix}vocab_size is {config.vocab_size}, but {embed.file} "
          f"stores {embed.key} with {embed.shape[0]} rows")
    layers = {int(m.group(1)) for k in found if (m := _LAYER_INDEX.match(k))}
    if layers and layers != set(range(config.num_layers)):
      raise WeightsError(
          f"{config_file}: {field_prefix}num_hidden_layers is {config.num_layers}, but {weights} "
          f"holds {len(layers)} layers ({_index_ranges(layers)})")
    if config.tie_word_embeddings and head is not None:
      if embed is not None and not np.array_equal(np.asarray(head.read()),
                                                   np.asarray(embed.read())):
        raise WeightsError(
            f"{config_file}: tie_word_embeddings is true, but {head.file} stores a {head.key} "
            f"that differs from {embed.key} (set tie_word_embeddings to false to use it)")
      found = {k: v for k, v in found.items() if k != "lm_head.kernel"}
    if not config.tie_word_embeddings and head is None:
      raise WeightsError(
          f"{config_file}: tie_word_embeddings is false, but {weights} has no lm_head.weight "
          f"(set tie_word_embeddings to true to reuse the input embedding)")
    return found

  return check


def _backbone_keys(keys: list[str]) -> dict[str, str]:
  """Backbone-only checkpoints (e.g. Qwen3-Embedding saved as Qwen3Model) lack the "model."
  prefix: file key -> key in the key table's naming."""
  bare = not any(k.startswith("model.") for k in keys)
  return {k: ("model." + k if bare and k != "lm_head.weight" else k) for k in keys}


def load_qwen(path, dtype="float32", mesh=None) -> tuple[Qwen, QwenConfig]:
  """Reads a local Qwen2/Qwen2.5/Qwen3 Hugging Face directory (no network).

  Args:
    path: a directory with `config.json` and `model.safetensors` or a sharded index.
    dtype: parameter and compute dtype ("float32", "bfloat16").
    mesh: if given, each tensor is placed straight onto its sharding
      (`lib.parallel.sharding.make_mesh`).

  Returns:
    (Qwen, QwenConfig). File, config and weight problems raise `WeightsError`.
  """
  config, _ = safetensors_io.read_config(path, QwenConfig.from_hf)
  dtype = jnp.dtype(dtype)
  abstract = nnx.eval_shape(lambda: Qwen(config, rngs=nnx.Rngs(0), dtype=dtype))
  model = safetensors_io.load_params(path, abstract, key_table(config), dtype=dtype, mesh=mesh,
                                     rename=_backbone_keys, check=decoder_check(config, path))
  return model, config


def save_qwen(model: Qwen, config: QwenConfig, path, max_shard_bytes: int = 4 << 30) -> None:
  """Writes `config.json` + safetensors that transformers' `from_pretrained` and vLLM load.

  Args:
    model: the Qwen to write; parameters keep its dtype.
    config: its QwenConfig.
    path: the output directory (created).
    max_shard_bytes: shard (with an index) above this many bytes.
  """
  hf_config = config.to_hf(dtype=jnp.dtype(model.dtype).name)
  safetensors_io.save_params(model, hf_config, path, key_table(config), max_shard_bytes)
