"""The machine's physical limits, measured in the benchmark's own run, and the work a model step
has to do against them: the "physical limit" columns of the benchmarks (issue #21).

Probes (run at the start of a benchmark, before its timed rounds):
- `memory_bandwidth`: STREAM-like copy (b = a) and triad (a = b + s * c) with numpy over arrays
  much larger than the L3 cache (auto: 4x L3, at least 256 MiB each), one thread per core on
  contiguous slices (numpy releases the GIL in these loops), best of `reps` timings per kernel.
  Bytes counted are the array transfers numpy performs: 2 per element for copy, 5 for the triad
  (numpy runs it as two passes, `a = s * c` then `a += b`); store write-allocate reads are not
  counted (STREAM's convention). GB/s uses 1 GB = 1e9 bytes; the probe's figure is the better
  kernel.
- `matmul_peak`: a jitted float32 [n,n] @ [n,n] matmul (2 n^3 FLOPs), best of `reps` after the
  compile; GFLOP/s.

Work per step (what a step must move or compute; none of the waste an implementation adds):
- `decode_bytes`: bytes read per greedy decode step: every weight once (the input embedding table
  only for the `batch` rows it gathers when the head is untied; a tied table is read whole as the
  head), plus the decode cache: its fixed-size part (recurrent states) whole and its per-slot part
  (K and V, slot mask) for the filled slots only, averaged over the decode.
- `update_flops`: model FLOPs of one training update: 6 N per token (forward + backward of every
  matmul weight; N leaves out an untied input embedding, a gather) plus causal attention
  6 L H D T^2 per sequence (QK^T and AV over the T (T+1) / 2 visible pairs, forward + backward,
  rounded to T^2 / 2); the logits matmul counts at every position.
"""
import math
import os
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

_MIB = 2**20


def l3_cache_bytes() -> int | None:
  """The L3 (last-level) cache size from sysfs, None where it cannot be read (off Linux, no L3).

  Returns:
    bytes, e.g. 314572800 for a "307200K" index3 entry.
  """
  try:
    with open("/sys/devices/system/cpu/cpu0/cache/index3/size", encoding="utf-8") as f:
      text = f.read().strip().upper()
  except OSError:
    return None
  scale = {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1:], 1)
  digits = text.rstrip("KMG")
  return int(digits) * scale if digits.isdigit() else None


def default_array_bytes(l3_bytes: int | None = None) -> int:
  """Size of one probe array: 4x the L3 cache and at least 256 MiB (1 GiB when L3 is unknown).

  Args:
    l3_bytes: the L3 size; None reads `l3_cache_bytes()`.
  Returns:
    bytes per array (a multiple of 4, whole float32 elements).
  """
  l3 = l3_cache_bytes() if l3_bytes is None else l3_bytes
  size = 1024 * _MIB if l3 is None else max(4 * l3, 256 * _MIB)
  return size - size % 4


def _best_seconds(fn: Callable[[], object], reps: int, clock: Callable[[], float]) -> float:
  best = math.inf
  for _ in range(reps):
    start = clock()
    fn()
    best = min(best, clock() - start)
  return max(best, 1e-12)


def memory_bandwidth(array_bytes: int | None = None, reps: int = 5, threads: int | None = None,
                     clock: Callable[[], float] = time.perf_counter) -> dict:
  """Attainable memory bandwidth: numpy STREAM copy and triad, best of `reps` each.

  Args:
    array_bytes: bytes per float32 array (3 arrays are allocated); None = `default_array_bytes()`.
    reps: timings per kernel (the fastest counts); the arrays are written once before timing.
    threads: worker threads, each on a contiguous slice; None = `os.cpu_count()`.
    clock: injectable for tests (default `time.perf_counter`).
  Returns:
    {gb_s: the better kernel's GB/s, copy_gb_s, triad_gb_s, array_bytes, l3_bytes,
    arrays_exceed_l3: whether each array is larger than 4x L3 (None when L3 is unknown; False
    means the figure is a cache bandwidth, not DRAM's), threads, reps}.
  """
  if reps < 1:
    raise ValueError(f"reps must be >= 1, got {reps}")
  l3 = l3_cache_bytes()
  array_bytes = default_array_bytes(l3) if array_bytes is None else int(array_bytes)
  n = max(1, array_bytes // 4)
  threads = max(1, min(int(threads or os.cpu_count() or 1), n))
  a, b, c = (np.full(n, v, np.float32) for v in (1.0, 2.0, 0.5))   # written: pages are mapped
  bounds = np.linspace(0, n, threads + 1).astype(np.int64)
  chunks = [slice(int(lo), int(hi)) for lo, hi in zip(bounds[:-1], bounds[1:])]

  def copy(s):
    np.copyto(b[s], a[s])

  def triad(s):
    np.multiply(c[s], 3.0, out=a[s])
    np.add(a[s], b[s], out=a[s])

  with ThreadPoolExecutor(threads) as pool:
    def parallel(kernel):
      return lambda: list(pool.map(kernel, chunks))
    copy_s = _best_seconds(parallel(copy), reps, clock)
    triad_s = _best_seconds(parallel(triad), reps, clock)
  copy_gb_s = 2 * 4 * n / copy_s / 1e9
  triad_gb_s = 5 * 4 * n / triad_s / 1e9
  return {"gb_s": max(copy_gb_s, triad_gb_s), "copy_gb_s": copy_gb_s, "triad_gb_s": triad_gb_s,
          "array_bytes": 4 * n, "l3_bytes": l3,
          "arrays_exceed_l3": None if l3 is None else bool(4 * n >= 4 * l3),   # >= 4x L3
          "threads": threads, "reps": int(reps)}


def matmul_peak(n: int = 2048, reps: int = 5,
                clock: Callable[[], float] = time.perf_counter) -> dict:
  """Attainable matmul throughput: a jitted float32 [n,n] @ [n,n], best of `reps` after compiling.

  Args:
    n: the square size (2048 saturates a CPU; smaller ones measure overheads too).
    reps: timed calls (the fastest counts).
    clock: injectable for tests (default `time.perf_counter`).
  Returns:
    {gflop_s, n, seconds (the fastest call), flops (2 n^3), reps, dtype}.
  """
  if n < 1 or reps < 1:
    raise ValueError(f"need n >= 1 and reps >= 1, got {n}, {reps}")
  kx, ky = jax.random.split(jax.random.key(0))
  x = jax.random.normal(kx, (n, n), jnp.float32)
  y = jax.random.normal(ky, (n, n), jnp.float32)
  mm = jax.jit(jnp.matmul)
  jax.block_until_ready(mm(x, y))                                    # the compile
  seconds = _best_seconds(lambda: jax.block_until_ready(mm(x, y)), reps, clock)
  flops = 2 * n**3
  return {"gflop_s": flops / seconds / 1e9, "n": int(n), "seconds": seconds, "flops": flops,
          "reps": int(reps), "dtype": "float32"}


def probe(block) -> dict:
  """Both probes with a benchmark config's `roofline` block.

  Args:
    block: `stream_mib` (MiB per array; 0 = auto, `default_array_bytes`), `matmul_n`, `reps`.
  Returns:
    {"memory": `memory_bandwidth(...)`, "matmul": `matmul_peak(...)`}.
  """
  array_bytes = block.stream_mib * _MIB if block.stream_mib else None
  return {"memory": memory_bandwidth(array_bytes, reps=block.reps),
          "matmul": matmul_peak(block.matmul_n, reps=block.reps)}


def note(limits: dict) -> str:
  """One markdown line for summary.md: the probed limits and how they were measured.

  Args:
    limits: what `probe` returned.
  """
  mem, mm = limits["memory"], limits["matmul"]
  line = (f"Physical limit, measured at the start of this run: memory bandwidth "
          f"{mem['gb_s']:.1f} GB/s (numpy STREAM copy {mem['copy_gb_s']:.1f} / triad "
          f"{mem['triad_gb_s']:.1f}, {mem['array_bytes'] / _MIB:.0f} MiB arrays, {mem['threads']} "
          f"threads, best of {mem['reps']}), float32 matmul peak {mm['gflop_s']:.1f} GFLOP/s "
          f"(jitted {mm['n']}x{mm['n']}).")
  if mem["arrays_exceed_l3"] is False:
    line += (f" **The probe arrays do not exceed 4x the {mem['l3_bytes'] / _MIB:.0f} MiB L3: "
             "the bandwidth is partly a cache bandwidth, not DRAM's.**")
  return line


def param_count_bytes(model: nnx.Module) -> tuple[int, int]:
  """Parameter count and bytes of a model, summed over the leaves of its `nnx.Param` state.

  Args:
    model: a Flax NNX model (real or abstract from `nnx.eval_shape`).
  Returns:
    (elements, bytes) over every parameter, each leaf at its own dtype.
  """
  leaves = jax.tree.leaves(nnx.state(model, nnx.Param))
  return (sum(int(np.prod(x.shape)) for x in leaves),
          sum(int(np.prod(x.shape)) * np.dtype(x.dtype).itemsize for x in leaves))


def decode_bytes(model: nnx.Module, config, *, batch: int, prompt_len: int,
                 new_tokens: int) -> dict:
  """Bytes a greedy decode step must read: weights + decode cache (see the module docstring).

  Decode step i (0-based, of `new_tokens`) attends over prompt_len + i + 1 filled slots, so the
  per-slot part is counted for prompt_len + (new_tokens + 1) / 2 slots on average.

  Args:
    model: a Qwen / Qwen35 model (`embed`, `init_cache(batch, max_len)`).
    config: its config (`tie_word_embeddings`, `vocab_size`, `hidden_size`).
    batch: rows decoded together. prompt_len: real prompt tokens. new_tokens: decode steps.
  Returns:
    {weight_bytes, cache_bytes, bytes_per_step (their sum), cache_fixed_bytes,
    cache_slot_bytes (per slot, all rows and layers), mean_context}.
  """
  _, weights = param_count_bytes(model)
  if not config.tie_word_embeddings:   # an untied table is gathered, `batch` rows per step
    itemsize = np.dtype(model.embed.get_value().dtype).itemsize
    weights -= (config.vocab_size - batch) * config.hidden_size * itemsize

  def cache_bytes(slots):
    shapes = jax.eval_shape(lambda: model.init_cache(batch, slots))
    return sum(int(np.prod(x.shape)) * np.dtype(x.dtype).itemsize
               for x in jax.tree.leaves(shapes))

  per_slot = cache_bytes(2) - cache_bytes(1)
  fixed = cache_bytes(1) - per_slot
  context = prompt_len + (new_tokens + 1) / 2
  cache = fixed + per_slot * context
  return {"weight_bytes": int(weights), "cache_bytes": float(cache),
          "bytes_per_step": float(weights + cache), "cache_fixed_bytes": int(fixed),
          "cache_slot_bytes": int(per_slot), "mean_context": float(context)}


def matmul_params(model: nnx.Module, config) -> int:
  """Parameters that take part in a matmul: all of them less an untied input embedding table.

  Args:
    model: a Flax NNX model. config: its config (`tie_word_embeddings`, `vocab_size`,
      `hidden_size`).
  Returns:
    N of the 6 N FLOPs-per-token rule (norm weights included; they are a rounding error).
  """
  count, _ = param_count_bytes(model)
  return count - (0 if config.tie_word_embeddings else config.vocab_size * config.hidden_size)


def update_flops(*, matmul_params: int, layers: int, heads: int, head_dim: int, batch: int,
                 seq_len: int) -> int:
  """Model FLOPs of one training update on a [batch, seq_len] batch (causal attention).

  Formula: 6 N B T + 6 L H D B T^2, i.e. forward (2 N per token) + backward (4 N per token) for
  every matmul weight, and for attention QK^T + AV (2 x 2 H D per visible query-key pair per
  layer) over the T^2 / 2 causal pairs of a sequence, times 3 for forward + backward.

  Args:
    matmul_params: N (`matmul_params`). layers, heads, head_dim: L, H (query heads), D.
    batch, seq_len: B, T (every token counts, prompt and response alike).
  Returns:
    FLOPs per update.
  """
  tokens = batch * seq_len
  return int(6 * matmul_params * tokens + 6 * layers * heads * head_dim * batch * seq_len**2)


def prefill_flops(*, matmul_params: int, head_params: int, attention_layers: int, heads: int,
                  head_dim: int, batch: int, prompt_len: int) -> int:
  """Model FLOPs of the sampler's prefill: a forward pass over [batch, prompt_len] tokens that
  projects only the last position onto the vocabulary (`lib.generate.sampling`'s prefill).

  Formula: 2 (N - N_head) B P + 2 N_head B + 2 L H D B P^2, i.e. 2 FLOPs per matmul weight per
  token, the head once per row, and softmax attention's QK^T + AV (2 x 2 H D per visible pair)
  over the P^2 / 2 causal pairs in each of the L softmax-attention layers (a DeltaNet layer's
  chunked recurrence is not counted; its projections are, in N).

  Args:
    matmul_params: N (`matmul_params`). head_params: N_head, the output head's weights (the
      tied table when tied). attention_layers: L, softmax-attention layers. heads, head_dim: H, D.
    batch, prompt_len: B, P.
  Returns:
    FLOPs per prefill.
  """
  return int(2 * (matmul_params - head_params) * batch * prompt_len + 2 * head_params * batch
             + 2 * attention_layers * heads * head_dim * batch * prompt_len**2)


def mfu(*, model_flops: float, seconds: float, devices: int, peak_flops: float) -> float:
  """Model FLOPs utilisation: model_flops / (seconds x devices x peak_flops).

  Args:
    model_flops: the step's model FLOPs (`update_flops`: 6 N T plus causal attention; no remat
      recomputation, as MFU is usually reported).
    seconds: the step's wall time. devices: devices that ran it.
    peak_flops: one device's dense bf16 peak FLOP/s (`compile_target.peak_bf16_flops`).
  Returns:
    The fraction of the devices' peak the model's FLOPs used.
  """
  return model_flops / (seconds * devices * peak_flops)

