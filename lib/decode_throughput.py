"""Greedy-decode throughput of `lib.sampling.generate` against transformers `generate()`, on the
same weights: the timing loop the sampler benchmarks share (experiments/bench/sampler.py for Qwen3,
experiments/bench/qwen3_5.py for Qwen3.5).

Greedy decoding with no EOS, so every row produces exactly `new_tokens` tokens; tokens/s = batch *
new_tokens / median wall time of the timed repeats. Our first call (the XLA compile) is timed apart
and excluded, as is transformers' warm-up run. Each row also reports how many greedy tokens the two
sides agree on (float rounding may flip a near-tie argmax on random weights, after which sequences
diverge). Needs torch (the `test` extra), as the transformers side does.
"""
import statistics
import time

import jax
import numpy as np
import torch
from absl import logging
from flax import nnx

from lib import sampling, tb
from lib.results import ResultsLog, write_summary


def _median_seconds(fn, repeats: int) -> float:
  """Median wall seconds of `repeats` calls of `fn()`."""
  times = []
  for _ in range(repeats):
    start = time.perf_counter()
    fn()
    times.append(time.perf_counter() - start)
  return statistics.median(times)


def _first_mismatch(a, b):
  diff = np.flatnonzero((a != b).any(axis=0))
  return int(diff[0]) if diff.size else a.shape[1]


def compare_generation(model, hf, cfg, config, workdir: str, tag: str, title: str) -> dict:
  """Times our jitted greedy decode against `hf.generate()` for each `config.batches` entry.

  One results row per batch size (resumable), printed and summarised with the ratio
  transformers time / our time.

  Args:
    model: our Flax NNX model; `hf` (a transformers causal LM) must hold the same weights.
    cfg: the model config (`vocab_size`, `num_params()`).
    config: the benchmark config: `seed`, `preset`, `batches`, `prompt_len`, `new_tokens`,
      `repeats`.
    workdir: where results.jsonl, TensorBoard scalars and the summary go.
    tag: TensorBoard/log prefix; title: the summary's title.
  Returns:
    the summary dict: preset, params_M and the ratio per batch size.
  """
  graphdef, state = nnx.split(model)
  rng = np.random.default_rng(config.seed)
  log = ResultsLog(workdir, key=("batch",))
  writer = tb.writer(workdir)
  n = config.new_tokens
  logging.info("%s: %s (%.1fM params), torch threads %d, jax devices %s", tag,
               config.preset, cfg.num_params() / 1e6, torch.get_num_threads(), jax.devices())
  for batch in config.batches:
    if log.has({"batch": batch}):
      continue
    ids = rng.integers(0, cfg.vocab_size, (batch, config.prompt_len)).astype(np.int32)
    mask = np.ones_like(ids)

    def ours():
      out = sampling.generate(graphdef, state, ids, mask, jax.random.key(0), max_new_tokens=n,
                              temperature=0.0)
      return np.asarray(jax.block_until_ready(out.tokens))

    def theirs():
      with torch.inference_mode():
        out = hf.generate(input_ids=torch.tensor(ids, dtype=torch.long),
                          attention_mask=torch.tensor(mask, dtype=torch.long), max_new_tokens=n,
                          min_new_tokens=n, do_sample=False, eos_token_id=None, pad_token_id=0)
      return out[:, config.prompt_len:].numpy()

    compile_s = _median_seconds(ours, 1)
    ours_tokens, theirs_tokens = ours(), theirs()  # warm-up of both sides, and the agreement check
    ours_s = _median_seconds(ours, config.repeats)
    theirs_s = _median_seconds(theirs, config.repeats)
    row = {"batch": batch, "new_tokens": n, "ours_tok_s": batch * n / ours_s,
           "transformers_tok_s": batch * n / theirs_s, "ratio": theirs_s / ours_s,
           "ours_first_call_s": compile_s, "ours_s": ours_s, "transformers_s": theirs_s,
           "greedy_agree_frac": float((ours_tokens == theirs_tokens).mean()),
           "greedy_first_mismatch": _first_mismatch(ours_tokens, theirs_tokens)}
    log.append(row)
    for key in ("ours_tok_s", "transformers_tok_s", "ratio"):
      writer.add_scalar(f"{tag}/{key}", row[key], batch)
    logging.info("batch %d: ours %.1f tok/s, transformers %.1f tok/s, ratio %.2fx", batch,
                 row["ours_tok_s"], row["transformers_tok_s"], row["ratio"])
  log.close()
  table = sorted(log.rows(), key=lambda r: r["batch"])
  for r in table:
    print(f"batch {r['batch']}: ours {r['ours_tok_s']:.1f} tok/s | transformers "
          f"{r['transformers_tok_s']:.1f} tok/s | ratio {r['ratio']:.2f}x | greedy agreement "
          f"{r['greedy_agree_frac']:.2f}")
  summary = {"preset": config.preset, "params_M": cfg.num_params() / 1e6,
             "ratio_by_batch": {str(r["batch"]): r["ratio"] for r in table}}
  write_summary(workdir, summary, table, title=title,
                notes=f"{config.preset}, greedy, {n} new tokens after a {config.prompt_len}-token "
                      "prompt, float32 on CPU; ratio = transformers time / our time.")
  return summary
