"""The analytic side of the memory plan (`lib/plan/memory_plan.py`): bytes one device holds of each
resident piece of a training run, counted from shapes and shardings, and the activation estimate
that stands in for the compiled step's temporaries when the step is not compiled.
"""
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from lib.models.qwen3_5.config import FULL, Qwen35Config
from lib.sft import batches

PADDINGS = ("max", "longest", "buckets")


def per_device_bytes(tree: Any, shardings: Any = None) -> int:
  """Bytes one device holds of a pytree.

  Args:
    tree: arrays or ShapeDtypeStructs.
    shardings: a matching tree of NamedShardings; None = every leaf whole on one device.
  Returns:
    The sum over leaves of the shard's element count times the itemsize.
  """
  leaves = jax.tree.leaves(tree)
  shs = [None] * len(leaves) if shardings is None else jax.tree.leaves(shardings)
  total = 0
  for x, sh in zip(leaves, shs):
    shape = tuple(x.shape) if sh is None else sh.shard_shape(tuple(x.shape))
    total += int(np.prod(shape, dtype=np.int64)) * jnp.dtype(x.dtype).itemsize
  return total


def full_attention_layers(config) -> int:
  """Softmax-attention layers: all of a Qwen2/3, the `full` ones of a Qwen3.5 (the rest DeltaNet).

  Args:
    config: a QwenConfig or Qwen35Config.
  """
  if isinstance(config, Qwen35Config):
    return sum(kind == FULL for kind in config.layer_types)
  return config.num_layers


def kv_cache_bytes(config, rows: int, length: int, dtype) -> int:
  """Bytes of the rollout KV cache (full-attention layers; Qwen3.5's DeltaNet layers keep a
  fixed-size recurrent state instead, not counted).

  Args:
    config: a QwenConfig or Qwen35Config.
    rows: sequences in the cache (on this device).
    length: prompt + generated tokens per sequence.
    dtype: the cache dtype (the compute dtype).
  Returns:
    2 (k, v) x full-attention layers x kv heads x head_dim x rows x length x itemsize.
  """
  itemsize = jnp.dtype(dtype).itemsize
  full = full_attention_layers(config)
  per_token = 2 * config.num_kv_heads * config.head_dim * itemsize
  return full * rows * length * per_token


def padded_lengths(lengths, seq_len: int, padding: str, bucket_multiple: int = 0) -> dict:
  """How many rows a run pads to each length, from the data's row lengths (`plan.lengths`).

  Args:
    lengths: token lengths of the data's rows (or a sample of them); empty: unknown.
    seq_len: the maximum length (rows are truncated there).
    padding: "max" (every row to seq_len), "longest" (every row to the longest row rounded up
      to 16, as `lib.sft.batches.left_padded`) or "buckets" (`lib.sft.batches.length_grouped`
      buckets of `bucket_multiple` tokens, 0: powers of two).
    bucket_multiple: see padding.
  Returns:
    {padded length: rows}; {seq_len: rows} (or {seq_len: 1}) when the lengths are unknown or
    padding is "max". Every length is capped at seq_len.
  Raises:
    ValueError: an unknown padding.
  """
  if padding not in PADDINGS:
    raise ValueError(f"unknown plan.padding {padding!r}; valid: {', '.join(PADDINGS)}")
  lengths = [min(int(n), seq_len) for n in lengths]
  if not lengths or padding == "max":
    return {seq_len: max(len(lengths), 1)}
  if padding == "longest":
    return {min(seq_len, batches.longest_padded(lengths)): len(lengths)}
  out: dict = {}
  for n in batches.bucket_lengths(lengths, multiple=bucket_multiple):
    out[min(n, seq_len)] = out.get(min(n, seq_len), 0) + 1
  return dict(sorted(out.items()))


def activation_estimate(config, rows: int, seq_len: int, remat: str = "none",
                        loss_chunk_tokens: int = 0) -> int:
  """Rough activation bytes of one micro-batch's forward + backward (used only when the step is
  not compiled), plus three float32 [rows, T, V] buffers (logits, softmax, their gradient), or
  three [loss_chunk_tokens, V] ones when the loss runs over token chunks of the vocabulary head.

  "none": 16 bytes per token, hidden unit and layer, and float32 [heads, T, T] attention scores
  and probabilities per layer. "full": 4 bytes per token, hidden unit and layer (the layer inputs)
  plus one layer's "none" activations (the layer being recomputed). "dots": "full" plus the
  projection outputs (2 bytes x (q + k + v + o + 3 x intermediate)) per token and layer.

  Args:
    config: a QwenConfig or Qwen35Config.
    rows: rows of the micro-batch (on this device).
    seq_len: tokens per row.
    remat: the `model.remat` policy ("none", "full" or "dots").
    loss_chunk_tokens: tokens per chunk of a vocabulary-chunked loss (0: unchunked).
  Returns:
    The estimated bytes.
  """
  scores = 2 * 4 * config.num_heads * seq_len * seq_len
  per_layer = seq_len * 16 * config.hidden_size + scores
  tokens = rows * seq_len
  logits = 3 * 4 * config.vocab_size * (min(loss_chunk_tokens, tokens) if loss_chunk_tokens
                                        else tokens)
  if remat == "none":
    return rows * config.num_layers * per_layer + logits
  saved = seq_len * 4 * config.hidden_size
  if remat == "dots":
    q, kv = config.num_heads * config.head_dim, config.num_kv_heads * config.head_dim
    saved += seq_len * 2 * (2 * q + 2 * kv + 3 * config.intermediate_size)
  return rows * (config.num_layers * saved + per_layer) + logits
