"""Hugging Face safetensors <-> Qwen3.5 NNX parameters: one key table used in both directions.

Reads text-only checkpoints (`Qwen3_5ForCausalLM`: `model.layers.*`) and full ones
(`Qwen3_5ForConditionalGeneration`: `model.language_model.layers.*` next to a `model.visual.*`
vision tower and `mtp.*` multi-token-prediction weights). Vision and MTP tensors are skipped and the
skip is logged; everything else must match the model exactly (one error lists every missing,
unexpected and mis-shaped key). Writes the text-only layout.
"""
import json
import logging
from pathlib import Path

import jax
import jax.numpy as jnp
import safetensors
import safetensors.flax
from flax import nnx

from lib.models import sharding as sharding_lib
from lib.models.params import (_flat_params, _pattern, _safetensors_files, _translate,
                               merge_checked, save_mapped)
from lib.models.qwen3_5 import Qwen35
from lib.models.qwen3_5_config import Qwen35Config

log = logging.getLogger(__name__)

# How a tensor is stored: torch Linear.weight [out, in] -> our kernel [in, out] ("T"); the depthwise
# Conv1d weight [C, 1, K] -> our [K, C] ("conv"); "" as is.
_TABLE = (
    ("model.embed_tokens.weight", "embed", ""),
    ("model.layers.{i}.self_attn.{p}_proj.weight", "layers.{i}.attn.{p}_proj.kernel", "T"),
    ("model.layers.{i}.self_attn.{p}_proj.bias", "layers.{i}.attn.{p}_proj.bias", ""),
    ("model.layers.{i}.self_attn.{p}_norm.weight", "layers.{i}.attn.{p}_norm.scale", ""),
    ("model.layers.{i}.linear_attn.in_proj_{p}.weight", "layers.{i}.linear_attn.in_proj_{p}.kernel",
     "T"),
    ("model.layers.{i}.linear_attn.conv1d.weight", "layers.{i}.linear_attn.conv_kernel", "conv"),
    ("model.layers.{i}.linear_attn.dt_bias", "layers.{i}.linear_attn.dt_bias", ""),
    ("model.layers.{i}.linear_attn.A_log", "layers.{i}.linear_attn.a_log", ""),
    ("model.layers.{i}.linear_attn.norm.weight", "layers.{i}.linear_attn.norm.scale", ""),
    ("model.layers.{i}.linear_attn.out_proj.weight", "layers.{i}.linear_attn.out_proj.kernel", "T"),
    ("model.layers.{i}.mlp.{p}_proj.weight", "layers.{i}.mlp.{p}_proj.kernel", "T"),
    ("model.layers.{i}.input_layernorm.weight", "layers.{i}.input_norm.scale", ""),
    ("model.layers.{i}.post_attention_layernorm.weight", "layers.{i}.post_attn_norm.scale", ""),
    ("model.norm.weight", "final_norm.scale", ""),
    ("lm_head.weight", "lm_head.kernel", "T"),
)
_FULL_PREFIX = "model.language_model."  # the text decoder inside a full (vision + text) checkpoint
_SKIPPED_PREFIXES = ("model.visual.", "mtp.")  # vision tower, multi-token-prediction head


_HF_TO_OURS = [(_pattern(hf), ours, kind) for hf, ours, kind in _TABLE]
_OURS_TO_HF = [(_pattern(ours), hf, kind) for hf, ours, kind in _TABLE]


def hf_to_ours(hf_key: str) -> tuple[str | None, str]:
  """'model.layers.0.linear_attn.A_log' -> ('layers.0.linear_attn.a_log', ''); None if unknown.
  Keys of a full checkpoint ('model.language_model.…') map like the text-only ones."""
  if hf_key.startswith(_FULL_PREFIX):
    hf_key = "model." + hf_key[len(_FULL_PREFIX):]
  return _translate(hf_key, _HF_TO_OURS, missing="")


def ours_to_hf(path: str) -> tuple[str | None, str]:
  return _translate(path, _OURS_TO_HF, missing="")


def _from_hf(tensor, kind):
  if kind == "T":
    return tensor.T
  if kind == "conv":
    return tensor.reshape(tensor.shape[0], tensor.shape[-1]).T
  return tensor


def _to_hf(value, kind):
  if kind == "T":
    return value.T
  if kind == "conv":
    return value.T[:, None, :]
  return value


def load_qwen3_5(path, dtype="float32", mesh: jax.sharding.Mesh | None = None):
  """Reads a local Qwen3.5 Hugging Face directory (no network) -> (Qwen35 model, Qwen35Config)."""
  path = Path(path)
  config = Qwen35Config.from_hf(json.loads((path / "config.json").read_text()))
  dtype = jnp.dtype(dtype)
  abstract = nnx.eval_shape(lambda: Qwen35(config, rngs=nnx.Rngs(0), dtype=dtype))
  graphdef, state = nnx.split(abstract)
  expected = _flat_params(state)
  shardings = {}
  if mesh is not None:
    named = sharding_lib.param_shardings(state, mesh)
    shardings = {k: v for k, (_, v) in _flat_params(named).items()}
  values, unexpected, mismatched, skipped = {}, [], [], {}
  for file in _safetensors_files(path):
    with safetensors.safe_open(str(file), framework="flax") as f:
      for hf_key in f.keys():
        prefix = next((p for p in _SKIPPED_PREFIXES if hf_key.startswith(p)), None)
        if prefix is not None:
          skipped[prefix] = skipped.get(prefix, 0) + 1
          continue
        ours, kind = hf_to_ours(hf_key)
        if ours == "lm_head.kernel" and config.tie_word_embeddings:
          continue  # some tied checkpoints also store the shared matrix under lm_head
        if ours not in expected:
          unexpected.append(hf_key)
          continue
        tensor = _from_hf(f.get_tensor(hf_key), kind)
        want = expected[ours][1].shape
        if tuple(tensor.shape) != tuple(want):
          mismatched.append(f"{hf_key}: file {tuple(tensor.shape)} vs model {tuple(want)} (as {ours})")
          continue
        tensor = tensor.astype(dtype)
        values[ours] = jax.device_put(tensor, shardings[ours]) if ours in shardings else tensor
  for prefix, count in skipped.items():
    log.info("%s: skipped %d tensors under %r (not part of the text decoder)", path, count, prefix)
  missing = [ours_to_hf(k)[0] or k for k in expected if k not in values]
  return merge_checked(graphdef, state, expected, values, path, missing, unexpected,
                       mismatched), config


def save_qwen3_5(model: Qwen35, config: Qwen35Config, path, max_shard_bytes: int = 4 << 30):
  """Writes `config.json` + safetensors in the text-only `Qwen3_5ForCausalLM` layout (sharded with
  an index above `max_shard_bytes`). Parameters keep the model's dtype."""
  def to_hf(key, value):
    hf_key, kind = ours_to_hf(key)
    return hf_key, _to_hf(value, kind)
  save_mapped(model, config, path, to_hf, max_shard_bytes)
