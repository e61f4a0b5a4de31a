"""`load_pretrained` / `save_pretrained` for every model family: config.json's `model_type` picks
the loader, the config's type picks the writer. Each family's `params.py` does the work through
`lib.models.safetensors_io`; `save_pretrained` also writes the tokenizer it is given, the one way
every export makes a folder that serves as it is."""
from pathlib import Path

import jax

from lib.models import safetensors_io
from lib.models import tokenizer as tokenizer_lib
from lib.models.qwen.config import QwenConfig
from lib.models.qwen.params import load_qwen, save_qwen
from lib.models.qwen3_5.config import Qwen35Config
from lib.models.qwen3_5.params import load_qwen3_5, save_qwen3_5

# config.json model_type -> loader(path, dtype, mesh) -> (model, config).
LOADERS = {
    "qwen2": load_qwen,
    "qwen3": load_qwen,
    "qwen3_5": load_qwen3_5,  # full vision-language checkpoint: its text decoder
    "qwen3_5_text": load_qwen3_5,
}
# Config type -> writer(model, config, path, max_shard_bytes).
SAVERS = {QwenConfig: save_qwen, Qwen35Config: save_qwen3_5}


def load_pretrained(path, dtype="float32", mesh: jax.sharding.Mesh | None = None):
  """Reads a local Hugging Face directory (no network) into one of our models.

  Args:
    path: a directory with `config.json` and `model.safetensors` or a sharded
      `model.safetensors.index.json`.
    dtype: parameter and compute dtype ("float32", "bfloat16").
    mesh: if given (`lib.parallel.sharding.make_mesh`), each tensor is placed straight onto its
      sharding, so the whole model never sits on one device.

  Returns:
    (model, config): a `Qwen` + `QwenConfig` or a `Qwen35` + `Qwen35Config`. A
    `safetensors_io.WeightsError` (a ValueError) names the file and field of any problem: an
    absent or corrupt file, a missing config field, a config that contradicts the weights, or the
    full list of missing, unexpected and mis-shaped tensors.
  """
  config_file = Path(path) / safetensors_io.CONFIG_FILE
  model_type = safetensors_io.read_json(config_file).get("model_type")
  if model_type not in LOADERS:
    raise safetensors_io.WeightsError(
        f"{config_file}: model_type {model_type!r} is not one of {sorted(LOADERS)}")
  return LOADERS[model_type](path, dtype, mesh)


def save_pretrained(model, config, path, tokenizer=None, max_shard_bytes: int = 4 << 30) -> None:
  """Writes `config.json` + safetensors that transformers' `from_pretrained` and vLLM load, and
  the tokenizer beside them, so the folder is a checkpoint `model.checkpoint` serves as it is.

  Args:
    model: a `Qwen` or `Qwen35`; parameters keep the model's dtype.
    config: its config (`QwenConfig` or `Qwen35Config`), which picks the layout.
    path: the output directory (created).
    tokenizer: the model's HF fast tokenizer, written with `tokenizer.save_tokenizer`
      (tokenizer.json, tokenizer_config.json, chat template); None writes weights only, which
      `load_pretrained` reads but a server or backend refuses (it has no tokenizer).
    max_shard_bytes: above this many bytes the weights are sharded, with an index.
  """
  if type(config) not in SAVERS:
    raise TypeError(f"no writer for {type(config).__name__}; known: "
                    f"{', '.join(t.__name__ for t in SAVERS)}")
  SAVERS[type(config)](model, config, path, max_shard_bytes)
  if tokenizer is not None:
    tokenizer_lib.save_tokenizer(tokenizer, path)
