"""Hugging Face safetensors <-> our NNX parameters: one key table used in both directions.

Load: `nnx.eval_shape` builds the model without allocating -> every tensor of `model.safetensors`
(or of a sharded `model.safetensors.index.json`) is mapped through `_TABLE`, transposed where torch
stores `Linear.weight` as [out, in], shape-checked, cast -> `nnx.merge`. Missing, unexpected and
mis-shaped keys are collected and reported together in one error.
"""
import json
import os
import re
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import safetensors
import safetensors.flax
from flax import nnx

from lib.models import sharding as sharding_lib
from lib.models.config import QwenConfig
from lib.models.qwen import Qwen

# (Hugging Face key, our parameter path, transpose). `{i}` is a layer index, `{p}` a projection name.
_TABLE = (
    ("model.embed_tokens.weight", "embed", False),
    ("model.layers.{i}.self_attn.{p}_proj.weight", "layers.{i}.attn.{p}_proj.kernel", True),
    ("model.layers.{i}.self_attn.{p}_proj.bias", "layers.{i}.attn.{p}_proj.bias", False),
    ("model.layers.{i}.self_attn.{p}_norm.weight", "layers.{i}.attn.{p}_norm.scale", False),
    ("model.layers.{i}.mlp.{p}_proj.weight", "layers.{i}.mlp.{p}_proj.kernel", True),
    ("model.layers.{i}.input_layernorm.weight", "layers.{i}.input_norm.scale", False),
    ("model.layers.{i}.post_attention_layernorm.weight", "layers.{i}.post_attn_norm.scale", False),
    ("model.norm.weight", "final_norm.scale", False),
    ("lm_head.weight", "lm_head.kernel", True),
)


def _pattern(template: str) -> re.Pattern:
  p = re.escape(template).replace(r"\{i\}", r"(?P<i>\d+)").replace(r"\{p\}", r"(?P<p>[a-z]+)")
  return re.compile(p + "$")


_HF_TO_OURS = [(_pattern(hf), ours, t) for hf, ours, t in _TABLE]
_OURS_TO_HF = [(_pattern(ours), hf, t) for hf, ours, t in _TABLE]


def _translate(key, rules, missing=False):
  """First matching rule -> (translated key, the rule's tag); (None, missing) if none matches."""
  for pattern, template, tag in rules:
    m = pattern.match(key)
    if m:
      return template.format(**m.groupdict()), tag
  return None, missing


def hf_to_ours(hf_key: str) -> tuple[str | None, bool]:
  """'model.layers.3.mlp.up_proj.weight' -> ('layers.3.mlp.up_proj.kernel', True); None if unknown."""
  return _translate(hf_key, _HF_TO_OURS)


def ours_to_hf(path: str) -> tuple[str | None, bool]:
  return _translate(path, _OURS_TO_HF)


def _safetensors_files(path: Path) -> list[Path]:
  index = path / "model.safetensors.index.json"
  if index.exists():
    weight_map = json.loads(index.read_text())["weight_map"]
    return [path / f for f in sorted(set(weight_map.values()))]
  single = path / "model.safetensors"
  if single.exists():
    return [single]
  raise FileNotFoundError(f"{path} holds neither model.safetensors nor model.safetensors.index.json")


def _iter_tensors(path: Path):
  for file in _safetensors_files(path):
    with safetensors.safe_open(str(file), framework="flax") as f:
      keys = list(f.keys())
      # Backbone-only checkpoints (e.g. Qwen3-Embedding saved as Qwen3Model) lack the "model." prefix.
      bare = not any(k.startswith("model.") for k in keys)
      for k in keys:
        yield ("model." + k if bare and k != "lm_head.weight" else k), f.get_tensor(k)


def _flat_params(state) -> dict[str, tuple]:
  """'layers.0.attn.q_proj.kernel' -> (state path tuple, Variable)."""
  return {".".join(str(p) for p in path): (path, var) for path, var in nnx.to_flat_state(state)}


def merge_checked(graphdef, state, expected, values, path, missing, unexpected, mismatched):
  """Raises one error naming every missing/unexpected/mis-shaped tensor, else fills and merges."""
  if missing or unexpected or mismatched:
    lines = [f"cannot load {path}:"]
    lines += [f"  missing: {k}" for k in missing]
    lines += [f"  unexpected: {k}" for k in unexpected]
    lines += [f"  shape mismatch: {m}" for m in mismatched]
    raise ValueError("\n".join(lines))
  for key, (_, var) in expected.items():
    var.set_value(values[key])
  return nnx.merge(graphdef, state)


def load_pretrained(path, dtype="float32", mesh: jax.sharding.Mesh | None = None):
  """Reads a local Hugging Face directory (no network) -> (Qwen model, QwenConfig).

  dtype: parameter and compute dtype ("float32", "bfloat16"). mesh: if given, each tensor is placed
  straight onto its sharding, so the whole model never sits on one device.
  """
  path = Path(path)
  hf_config = json.loads((path / "config.json").read_text())
  if hf_config.get("model_type") in ("qwen3_5", "qwen3_5_text"):  # hybrid DeltaNet decoder
    from lib.models.qwen3_5_params import load_qwen3_5  # imports this module: import on use
    return load_qwen3_5(path, dtype, mesh)
  config = QwenConfig.from_hf(hf_config)
  dtype = jnp.dtype(dtype)
  abstract = nnx.eval_shape(lambda: Qwen(config, rngs=nnx.Rngs(0), dtype=dtype))
  graphdef, state = nnx.split(abstract)
  expected = _flat_params(state)
  shardings = {}
  if mesh is not None:
    named = sharding_lib.param_shardings(state, mesh)
    shardings = {k: v.get_value() for k, (_, v) in _flat_params(named).items()}
  values, unexpected, mismatched = {}, [], []
  for hf_key, tensor in _iter_tensors(path):
    ours, transpose = hf_to_ours(hf_key)
    if ours == "lm_head.kernel" and config.tie_word_embeddings:
      continue  # some tied checkpoints also store the shared matrix under lm_head
    if ours not in expected:
      unexpected.append(hf_key)
      continue
    if transpose:
      tensor = tensor.T
    want = expected[ours][1].shape
    if tuple(tensor.shape) != tuple(want):
      mismatched.append(f"{hf_key}: file {tuple(tensor.shape)} vs model {tuple(want)} (as {ours})")
      continue
    tensor = tensor.astype(dtype)
    values[ours] = jax.device_put(tensor, shardings[ours]) if ours in shardings else tensor
  missing = [ours_to_hf(k)[0] or k for k in expected if k not in values]
  return merge_checked(graphdef, state, expected, values, path, missing, unexpected,
                       mismatched), config


def write_safetensors(tensors: dict, path: Path, max_shard_bytes: int) -> None:
  """Writes HF-named `tensors` as `model.safetensors`, or as shards + an index above the limit."""
  shards, current, size = [], {}, 0
  for key in sorted(tensors):
    nbytes = tensors[key].size * tensors[key].dtype.itemsize
    if current and size + nbytes > max_shard_bytes:
      shards.append(current)
      current, size = {}, 0
    current[key], size = tensors[key], size + nbytes
  shards.append(current)
  metadata = {"format": "pt"}  # transformers refuses safetensors files without a known format
  if len(shards) == 1:
    safetensors.flax.save_file(shards[0], str(path / "model.safetensors"), metadata=metadata)
  else:
    weight_map = {}
    for n, shard in enumerate(shards, 1):
      name = f"model-{n:05d}-of-{len(shards):05d}.safetensors"
      safetensors.flax.save_file(shard, str(path / name), metadata=metadata)
      weight_map.update({k: name for k in shard})
    total = sum(t.size * t.dtype.itemsize for t in tensors.values())
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    (path / "model.safetensors.index.json").write_text(json.dumps(index, indent=2))


def save_pretrained(model: Qwen, config: QwenConfig, path, max_shard_bytes: int = 4 << 30):
  """Writes `config.json` + safetensors (sharded with an index above `max_shard_bytes`) that
  transformers `from_pretrained` and vLLM load. Parameters keep the model's dtype."""
  from lib.models import qwen3_5_config, qwen3_5_params  # the latter imports this module
  if isinstance(config, qwen3_5_config.Qwen35Config):
    return qwen3_5_params.save_qwen3_5(model, config, path, max_shard_bytes)
  def to_hf(key, value):
    hf_key, transpose = ours_to_hf(key)
    return hf_key, (value.T if transpose else value)
  save_mapped(model, config, path, to_hf, max_shard_bytes)


def save_mapped(model, config, path, to_hf, max_shard_bytes: int = 4 << 30) -> None:
  """`config.json` + safetensors of `model`; `to_hf(our key, array)` -> (Hugging Face name or
  None when the key table has none, array in the Hugging Face layout)."""
  path = Path(path)
  path.mkdir(parents=True, exist_ok=True)
  tensors = {}
  for key, (_, var) in _flat_params(nnx.state(model, nnx.Param)).items():
    hf_key, value = to_hf(key, jax.device_get(var.get_value()))
    if hf_key is None:
      raise ValueError(f"parameter {key} has no Hugging Face name in the key table")
    tensors[hf_key] = jnp.asarray(np.ascontiguousarray(value))
  write_safetensors(tensors, path, max_shard_bytes)
  hf_config = config.to_hf(dtype=jnp.dtype(model.dtype).name)
  (path / "config.json").write_text(json.dumps(hf_config, indent=2) + os.linesep)
