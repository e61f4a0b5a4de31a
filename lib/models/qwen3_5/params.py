"""Hugging Face safetensors <-> Qwen3.5 parameters: one key table used both ways.

Reads text-only checkpoints (`Qwen3_5ForCausalLM`: `model.layers.*`) and full ones
(`Qwen3_5ForConditionalGeneration`: `model.language_model.layers.*` next to a `model.visual.*`
vision tower and `mtp.*` multi-token-prediction weights). Vision and MTP tensors are skipped and the
skip is logged; everything else must match the model exactly (one error lists every missing,
unexpected and mis-shaped key), after the same config-against-weights check as Qwen
(`lib.models.qwen.params.decoder_check`). Writes the text-only layout.
"""
import collections
import logging

import jax.numpy as jnp
from flax import nnx

from lib.models import safetensors_io
from lib.models.key_table import AS_IS, TRANSPOSED, KeyTable, Layout
from lib.models.qwen.params import decoder_check, decoder_rows, fused_columns
from lib.models.qwen3_5.config import Qwen35Config
from lib.models.qwen3_5.deltanet import GatedDeltaNet
from lib.models.qwen3_5.model import Qwen35

log = logging.getLogger(__name__)

# The depthwise Conv1d weight [C, 1, K] <-> our conv kernel [K, C].
CONV = Layout("depthwise conv", to_ours=lambda x: x.reshape(x.shape[0], x.shape[-1]).T,
              to_hf=lambda x: x.T[:, None, :])


def key_table(config: Qwen35Config) -> KeyTable:
  """The Hugging Face key table of a Qwen3.5 of `config`: the shared decoder rows plus the Gated
  DeltaNet's, whose four input projections are one fused parameter."""
  # Per query head the checkpoint's q_proj rows hold [query (D) | gate (D)]: 2 D query columns.
  return KeyTable(decoder_rows(config, 2 * config.head_dim) + (
      ("model.layers.{i}.linear_attn.in_proj_{p}.weight", "layers.{i}.linear_attn.in_proj.kernel",
       fused_columns(("qkv", "z", "b", "a"), TRANSPOSED, GatedDeltaNet.in_proj_columns(config))),
      ("model.layers.{i}.linear_attn.conv1d.weight", "layers.{i}.linear_attn.conv_kernel", CONV),
      ("model.layers.{i}.linear_attn.dt_bias", "layers.{i}.linear_attn.dt_bias", AS_IS),
      ("model.layers.{i}.linear_attn.A_log", "layers.{i}.linear_attn.a_log", AS_IS),
      ("model.layers.{i}.linear_attn.norm.weight", "layers.{i}.linear_attn.norm.scale", AS_IS),
      ("model.layers.{i}.linear_attn.out_proj.weight", "layers.{i}.linear_attn.out_proj.kernel",
       TRANSPOSED),
  ))


_FULL_PREFIX = "model.language_model."  # the text decoder inside a full (vision + text) checkpoint
_SKIPPED_PREFIXES = ("model.visual.", "mtp.")  # vision tower, multi-token-prediction head


def _text_decoder_keys(skipped: collections.Counter):
  """-> a `rename` for `load_params`: full-checkpoint keys map like text-only ones; vision and MTP
  keys map to None (skipped), counted per prefix in `skipped`."""

  def rename(keys: list[str]) -> dict[str, str | None]:
    names = {}
    for key in keys:
      prefix = next((p for p in _SKIPPED_PREFIXES if key.startswith(p)), None)
      if prefix is not None:
        skipped[prefix] += 1
        names[key] = None
      elif key.startswith(_FULL_PREFIX):
        names[key] = "model." + key[len(_FULL_PREFIX):]
      else:
        names[key] = key
    return names

  return rename


def load_qwen3_5(path, dtype="float32", mesh=None) -> tuple[Qwen35, Qwen35Config]:
  """Reads a local Qwen3.5 Hugging Face directory (no network), text-only or full.

  Args:
    path: a directory with `config.json` and `model.safetensors` or a sharded index.
    dtype: parameter and compute dtype ("float32", "bfloat16").
    mesh: if given, each tensor is placed straight onto its sharding
      (`lib.parallel.sharding.make_mesh`).

  Returns:
    (Qwen35, Qwen35Config). File, config and weight problems raise
    `safetensors_io.WeightsError`.
  """
  config, raw = safetensors_io.read_config(path, Qwen35Config.from_hf)
  nested = "text_config." if raw.get("model_type") == "qwen3_5" else ""
  dtype = jnp.dtype(dtype)
  abstract = nnx.eval_shape(lambda: Qwen35(config, rngs=nnx.Rngs(0), dtype=dtype))
  skipped = collections.Counter()
  model = safetensors_io.load_params(path, abstract, key_table(config), dtype=dtype, mesh=mesh,
                                     rename=_text_decoder_keys(skipped),
                                     check=decoder_check(config, path, field_prefix=nested))
  for prefix, count in skipped.items():
    log.info("%s: skipped %d tensors under %r (not part of the text decoder)", path, count, prefix)
  return model, config


def save_qwen3_5(model: Qwen35, config: Qwen35Config, path, max_shard_bytes: int = 4 << 30) -> None:
  """Writes `config.json` + safetensors in the text-only `Qwen3_5ForCausalLM` layout.

  Args:
    model: the Qwen35 to write; parameters keep its dtype.
    config: its Qwen35Config.
    path: the output directory (created).
    max_shard_bytes: shard (with an index) above this many bytes.
  """
  hf_config = config.to_hf(dtype=jnp.dtype(model.dtype).name)
  safetensors_io.save_params(model, hf_config, path, key_table(config), max_shard_bytes)
