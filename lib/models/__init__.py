"""Qwen2/Qwen2.5/Qwen3 and Qwen3.5 language models in Flax NNX, with Hugging Face safetensors in and
out. This facade is the public API; the families live in `qwen/` and `qwen3_5/` (config.py,
model.py, params.py = the Hugging Face key table), over one reader/writer (`safetensors_io.py`).

Quick reference:

  from flax import nnx
  from lib import models

  config = models.preset("qwen3-tiny")     # or "qwen3.5-tiny", ...: models.PRESETS, both families
  model = models.build(config, rngs=nnx.Rngs(0))       # random model, one line (= models.Qwen(...))
  logits = model(input_ids, attention_mask)            # [B,T] -> float32 [B,T,V]; left padding ok
  logp = models.sequence_token_logprobs(model, input_ids, attention_mask)   # [B,T-1] log p(x_t|x_<t)

  model, config = models.load_pretrained("path/to/hf_dir", dtype="bfloat16")   # local, no network
  models.save_pretrained(model, config, "path/to/out")   # transformers / vLLM can load it

  vec = models.embed(model, input_ids, attention_mask)  # [B,hidden] unit vectors (last-token pool)

  mesh = models.make_mesh(data=2, model=4)   # lib.sharding's one ("data", "fsdp", "model") mesh
  models.shard_model(model, mesh)
  models.set_remat(model, "full")            # training: recompute each layer in the backward pass

A broken checkpoint raises `models.WeightsError` (a ValueError) naming the file and field.
Generation lives in `lib.sampling`. New layer types plug into `Qwen` through the per-layer protocol
documented in lib/models/qwen/model.py (`init_cache` + `__call__(x, ctx, cache) -> (x, cache)`);
the layers both families share live in `layers.py` and `attention.py`.
"""
import jax.numpy as jnp
from flax import nnx

from lib.models.attention import Context, KVCache
from lib.models.embedding import embed, last_token_index
from lib.models.pretrained import load_pretrained, save_pretrained
from lib.models.presets import PRESETS, preset
from lib.models.qwen.config import QwenConfig
from lib.models.qwen.model import Cache, Qwen
from lib.models.qwen3_5.config import Qwen35Config
from lib.models.qwen3_5.model import Qwen35
from lib.models.remat import REMAT_POLICIES, set_remat
from lib.models.safetensors_io import WeightsError
from lib.models.sharding import shard_batch, shard_model
from lib.sharding import make_mesh
from lib.train_state import token_logprobs


def build(config: QwenConfig | Qwen35Config, rngs: nnx.Rngs | None = None, dtype="float32") -> Qwen:
  """A randomly initialised model (normal(0.02) weights, unit norms).

  Args:
    config: a QwenConfig (-> Qwen) or a Qwen35Config (-> Qwen35), e.g. `preset("qwen3-tiny")`.
    rngs: seeds the weights; nnx.Rngs(0) when None.
    dtype: parameter and compute dtype.

  Returns:
    The model; `model(ids [B,T], mask [B,T])` -> float32 logits [B,T,V].
  """
  cls = Qwen35 if isinstance(config, Qwen35Config) else Qwen  # Qwen3.5: hybrid DeltaNet decoder
  return cls(config, rngs=nnx.Rngs(0) if rngs is None else rngs, dtype=jnp.dtype(dtype))


def sequence_token_logprobs(model: Qwen, input_ids, attention_mask=None):
  """log p(input_ids[:, t] | input_ids[:, :t]) for t >= 1: the model run on whole sequences, each
  token scored by its predecessor's logits (`lib.train_state.token_logprobs` of given logits).

  Args:
    model: a Qwen or Qwen35.
    input_ids: int [B,T].
    attention_mask: [B,T], 1 = token, 0 = padding; None = all tokens.

  Returns:
    float32 [B,T-1]; 0 where token t or its predecessor is padding (a left-padded row's first real
    token has no context to score it).
  """
  logp = token_logprobs(model(input_ids, attention_mask)[:, :-1], input_ids[:, 1:])
  if attention_mask is None:
    return logp
  mask = attention_mask.astype(bool)
  return jnp.where(mask[:, 1:] & mask[:, :-1], logp, 0.0)


__all__ = [
    "PRESETS", "QwenConfig", "preset", "Qwen", "Qwen35", "Qwen35Config", "Cache", "Context",
    "KVCache", "build", "load_pretrained", "save_pretrained", "WeightsError",
    "sequence_token_logprobs", "embed", "last_token_index", "make_mesh", "shard_model",
    "shard_batch", "REMAT_POLICIES", "set_remat",
]
