"""Qwen2/Qwen2.5/Qwen3 language models in Flax NNX, with Hugging Face safetensors in and out.

Quick reference:

  from flax import nnx
  from lib import models

  config = models.preset("qwen3-tiny")                 # or models.QwenConfig(...), models.PRESETS
  model = models.build(config, rngs=nnx.Rngs(0))       # random model, one line (= models.Qwen(...))
  logits = model(input_ids, attention_mask)            # [B,T] -> float32 [B,T,V]; left padding ok
  logp = models.token_logprobs(model, input_ids, attention_mask)   # [B,T-1], log p(x_t | x_<t)

  model, config = models.load_pretrained("path/to/hf_dir", dtype="bfloat16")   # local, no network
  models.save_pretrained(model, config, "path/to/out")   # transformers / vLLM can load it

  vec = models.embed(model, input_ids, attention_mask)  # [B,hidden] unit vectors (last-token pool)

  mesh = models.make_mesh(data=2, model=4); models.shard_model(model, mesh)

Generation lives in `lib.sampling`. New layer types plug into `Qwen` through the per-layer protocol
documented in lib/models/qwen.py (`init_cache` + `__call__(x, ctx, cache) -> (x, cache)`).
"""
import jax
import jax.numpy as jnp
from flax import nnx

from lib.models.config import PRESETS, QwenConfig, preset
from lib.models.embedding import embed, last_token_index
from lib.models.params import load_pretrained, save_pretrained
from lib.models.qwen import Cache, Context, KVCache, Qwen
from lib.models.qwen3_5 import Qwen35
from lib.models.qwen3_5_config import Qwen35Config
from lib.models.sharding import make_mesh, shard_batch, shard_model


def build(config: QwenConfig, rngs: nnx.Rngs | None = None, dtype="float32") -> Qwen:
  """A randomly initialised model (normal(0.02) weights, unit norms), seeded by `rngs`."""
  cls = Qwen35 if isinstance(config, Qwen35Config) else Qwen  # Qwen3.5: hybrid DeltaNet decoder
  return cls(config, rngs=nnx.Rngs(0) if rngs is None else rngs, dtype=jnp.dtype(dtype))


def token_logprobs(model: Qwen, input_ids, attention_mask=None):
  """log p(input_ids[:, t] | input_ids[:, :t]) for t >= 1 -> float32 [B, T-1]; 0 where token t or
  its predecessor is padding (a left-padded row's first real token has no context to score it)."""
  logits = model(input_ids, attention_mask)[:, :-1]
  targets = input_ids[:, 1:]
  logp = jnp.take_along_axis(jax.nn.log_softmax(logits, axis=-1), targets[..., None], axis=-1)[..., 0]
  if attention_mask is None:
    return logp
  mask = attention_mask.astype(bool)
  return jnp.where(mask[:, 1:] & mask[:, :-1], logp, 0.0)


__all__ = [
    "PRESETS", "QwenConfig", "preset", "Qwen", "Qwen35", "Qwen35Config", "Cache", "Context", "KVCache", "build",
    "load_pretrained", "save_pretrained", "token_logprobs", "embed", "last_token_index",
    "make_mesh", "shard_model", "shard_batch",
]
