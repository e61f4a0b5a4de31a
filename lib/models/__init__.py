"""Qwen2/Qwen2.5/Qwen3 and Qwen3.5 language models in Flax NNX, with Hugging Face safetensors in and
out. This facade is the public API:

  qwen/              Qwen2 / Qwen2.5 / Qwen3: config and presets, the decoder, the HF key table
  qwen3_5/           Qwen3.5: the hybrid Gated DeltaNet + attention decoder and its key table
  layers.py          layers every family shares: annotated parameters, Dense projections, SwiGLU MLP
  attention.py       grouped-query softmax attention and the KV cache
  matmul.py          the Dense matmul, with a weight gradient laid out for CPU
  remat.py           per-layer rematerialisation of the decoder stack
  presets.py         the one table of named model configs (`preset(name, **overrides)`)
  key_table.py       key tables: HF parameter names and layouts, fused projections
  safetensors_io.py  HF checkpoint directories <-> NNX parameters, with shape checks
  pretrained.py      `load_pretrained` / `save_pretrained`, the family picked by config.json
  embedding.py       sentence embeddings from a Qwen backbone (last-token pooling)
  logprobs.py        per-token log-probabilities of given tokens and of whole sequences
  chunked.py         vocabulary-chunked head: log-probs, entropies, C token positions at a time
  tokenizer.py       HF fast tokenizers from local directories, small byte-level BPEs trained here
  model_setup.py     the one way to get a model from a config's `model` block (+ its tokenizer)

Quick reference:

  from flax import nnx
  from lib import models

  config = models.preset("qwen3-tiny")     # or "qwen3.5-tiny", ...: models.PRESETS, both families
  model = models.build(config, rngs=nnx.Rngs(0))       # random model, one line (= models.Qwen(...))
  logits = model(input_ids, attention_mask)            # [B,T] -> float32 [B,T,V]; left padding ok
  logp = models.sequence_token_logprobs(model, input_ids, attention_mask)   # [B,T-1] log p(x_t|x_<t)

  model, config = models.load_pretrained("path/to/hf_dir", dtype="bfloat16")   # local, no network
  models.save_pretrained(model, config, "path/to/out", tokenizer=tok)   # + tokenizer: servable

  vec = models.embed(model, input_ids, attention_mask)  # [B,hidden] unit vectors (last-token pool)

  mesh = models.make_mesh(data=2, model=4)   # the one ("data", "fsdp", "model") mesh
  models.shard_model(model, mesh)
  models.set_remat(model, "full")            # training: recompute each layer in the backward pass

A broken checkpoint raises `models.WeightsError` (a ValueError) naming the file and field.
Generation lives in `lib.generate.sampling`. New layer types plug into `Qwen` through the per-layer
protocol documented in lib/models/qwen/model.py (`init_cache` + `__call__(x, ctx, cache) -> (x,
cache)`); the layers both families share live in `layers.py` and `attention.py`.
"""
import jax.numpy as jnp
from flax import nnx

from lib.models.attention import Context, KVCache
from lib.models.embedding import embed, last_token_index
from lib.models.logprobs import sequence_token_logprobs
from lib.models.presets import PRESETS, preset
from lib.models.pretrained import load_pretrained, save_pretrained
from lib.models.qwen.config import QwenConfig
from lib.models.qwen.model import Cache, Qwen
from lib.models.qwen3_5.config import Qwen35Config
from lib.models.qwen3_5.model import Qwen35
from lib.models.remat import REMAT_POLICIES, set_remat
from lib.models.safetensors_io import WeightsError
from lib.parallel.placement import shard_model
from lib.parallel.sharding import make_mesh, shard_batch


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


__all__ = [
    "PRESETS", "QwenConfig", "preset", "Qwen", "Qwen35", "Qwen35Config", "Cache", "Context",
    "KVCache", "build", "load_pretrained", "save_pretrained", "WeightsError",
    "sequence_token_logprobs", "embed", "last_token_index", "make_mesh", "shard_model",
    "shard_batch", "REMAT_POLICIES", "set_remat",
]
