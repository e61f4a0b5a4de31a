"""Greedy-decode throughput of `lib.generate.sampling.generate` against transformers `generate()`,
on the same weights: the timing loop the sampler benchmarks share (experiments/bench/sampler.py for
Qwen3, experiments/bench/qwen3_5.py for Qwen3.5).

Greedy decoding with no EOS, so every row produces exactly `new_tokens` tokens; tokens/s counts
response tokens only (batch * new_tokens per call; the prompt is not counted), the same on both
sides. Timing: `config.rounds` interleaved rounds (ours, transformers, ...) of `lib.bench.rounds`,
median tokens/s per side with its min-max, the ratio of medians with its range over rounds, and the
machine's load; a noisy run (load above one per core) gets no headline ratio. Our first call (the
XLA compile) is timed apart and excluded, as is one warm-up call of each side. Each row also reports
how many greedy tokens the two sides agree on (float rounding may flip a near-tie argmax on random
weights, after which sequences diverge). Needs torch (the `test` extra), as the transformers side
does.

The physical limit (`lib.plan.roofline`): the machine's memory bandwidth and matmul peak are probed
once before the rounds; each row reports the bytes one decode step must read (weights + the filled
part of the decode cache, `roofline.decode_bytes`), our achieved GB/s (those bytes x our median
steps/s, steps/s = tokens/s / batch, prefill included), its share of the probed bandwidth, and the
tokens/s that bandwidth would allow. A third side in the same rounds, our prefill (a call with one
new token), splits the call: decode-only steps/s = (new_tokens - 1) / (median call seconds -
median prefill seconds), its GB/s and share of the bandwidth (`decode_bandwidth_frac`), and the
prefill's model-FLOPs utilisation against the matmul peak (`prefill_mfu`, `roofline.prefill_flops`).
"""
import time

import jax
import numpy as np
import torch
from absl import logging
from flax import nnx

from lib.bench.rounds import Rounds, token_accounting
from lib.generate import sampling
from lib.models import KVCache
from lib.plan import roofline
from lib.run import tb
from lib.run.results import ResultsLog, write_summary


def _first_mismatch(a, b):
  diff = np.flatnonzero((a != b).any(axis=0))
  return int(diff[0]) if diff.size else a.shape[1]


def _bandwidth_text(row: dict) -> str:
  # A row resumed from a results.jsonl written before the roofline columns existed has none.
  if row.get("bandwidth_frac") is None:
    return " | bandwidth not measured for this row"
  text = (f" | {row['ours_GB_s']:.1f} GB/s = {100 * row['bandwidth_frac']:.0f}% of the probed "
          "bandwidth")
  if row.get("decode_bandwidth_frac") is not None:
    text += (f" (decode only {100 * row['decode_bandwidth_frac']:.0f}%) | prefill MFU "
             f"{100 * row['prefill_mfu']:.1f}%")
  return text


def _prefill_flops(model, cfg, batch: int, prompt_len: int) -> int:
  cache = jax.eval_shape(lambda: model.init_cache(1, 1))
  return roofline.prefill_flops(
      matmul_params=roofline.matmul_params(model, cfg),
      head_params=cfg.vocab_size * cfg.hidden_size,
      attention_layers=sum(isinstance(c, KVCache) for c in cache.layers), heads=cfg.num_heads,
      head_dim=cfg.head_dim, batch=batch, prompt_len=prompt_len)


def _split(t: dict, n: int, per_step: float, flops: int, limits: dict) -> dict:
  """Decode-only rate and prefill MFU from the median call and prefill seconds (None when the
  difference is not positive, e.g. one new token or a noisy round)."""
  prefill_s = t["ours_prefill"]["seconds"]["median"]
  decode_s = t["ours"]["seconds"]["median"] - prefill_s
  steps = (n - 1) / decode_s if n > 1 and decode_s > 0 else None
  gb_s = None if steps is None else per_step * steps / 1e9
  return {"prefill_ms": 1e3 * prefill_s, "prefill_GFLOP": flops / 1e9,
          "prefill_mfu": flops / prefill_s / 1e9 / limits["matmul"]["gflop_s"],
          "decode_steps_s": steps, "decode_GB_s": gb_s,
          "decode_bandwidth_frac": None if gb_s is None else gb_s / limits["memory"]["gb_s"]}


def compare_generation(model, hf, cfg, config, workdir: str, tag: str, title: str) -> dict:
  """Times our jitted greedy decode against `hf.generate()` for each `config.batches` entry.

  One results row per batch size (resumable), printed and summarised with the ratio of median
  tokens/s (ours / transformers) over interleaved rounds.

  Args:
    model: our Flax NNX model; `hf` (a transformers causal LM) must hold the same weights.
    cfg: the model config (`vocab_size`, `num_params()`).
    config: the benchmark config: `seed`, `preset`, `batches`, `prompt_len`, `new_tokens`,
      `rounds`, `roofline` (the probe's block, `lib.plan.roofline.probe`).
    workdir: where results.jsonl, TensorBoard scalars and the summary go.
    tag: TensorBoard/log prefix; title: the summary's title.
  Returns:
    the summary dict: preset, params_M, the ratio and our share of the probed memory bandwidth
    per batch size (None on a noisy run), the probed limits, the machine state and the token
    accounting.
  """
  graphdef, state = nnx.split(model)
  rng = np.random.default_rng(config.seed)
  log = ResultsLog(workdir, key=("batch",))
  writer = tb.writer(workdir)
  n = config.new_tokens
  timer = Rounds(config.rounds, warmup=1)
  limits = roofline.probe(config.roofline)         # before the rounds, on the same machine state
  bandwidth = limits["memory"]["gb_s"]
  logging.info("%s: probed %.1f GB/s memory bandwidth, %.1f GFLOP/s matmul", tag, bandwidth,
               limits["matmul"]["gflop_s"])
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

    def prefill():                                     # prompt + one new token
      out = sampling.generate(graphdef, state, ids, mask, jax.random.key(0), max_new_tokens=1,
                              temperature=0.0)
      return np.asarray(jax.block_until_ready(out.tokens))

    def theirs():
      with torch.inference_mode():
        out = hf.generate(input_ids=torch.tensor(ids, dtype=torch.long),
                          attention_mask=torch.tensor(mask, dtype=torch.long), max_new_tokens=n,
                          min_new_tokens=n, do_sample=False, eos_token_id=None, pad_token_id=0)
      return out[:, config.prompt_len:].numpy()

    start = time.perf_counter()
    ours_tokens = ours()                               # the XLA compile, timed apart
    compile_s = time.perf_counter() - start
    theirs_tokens = theirs()                           # the greedy agreement check
    t = timer.time({"ours": ours, "transformers": theirs, "ours_prefill": prefill},
                   work={"ours": batch * n, "transformers": batch * n,
                         "ours_prefill": batch * config.prompt_len})
    traffic = roofline.decode_bytes(model, cfg, batch=batch, prompt_len=config.prompt_len,
                                    new_tokens=n)
    per_step = traffic["bytes_per_step"]
    ours_gb_s = per_step * t["ours"]["per_s"]["median"] / batch / 1e9
    row = {"batch": batch, "new_tokens": n, "ours_tok_s": t["ours"]["per_s"]["median"],
           "ours_tok_s_min": t["ours"]["per_s"]["min"],
           "ours_tok_s_max": t["ours"]["per_s"]["max"],
           "transformers_tok_s": t["transformers"]["per_s"]["median"],
           "transformers_tok_s_min": t["transformers"]["per_s"]["min"],
           "transformers_tok_s_max": t["transformers"]["per_s"]["max"],
           **Rounds.compare(t["ours"], t["transformers"]), "ours_first_call_s": compile_s,
           "greedy_agree_frac": float((ours_tokens == theirs_tokens).mean()),
           "greedy_first_mismatch": _first_mismatch(ours_tokens, theirs_tokens),
           "read_MB_per_step": per_step / 1e6,
           "weight_MB_per_step": traffic["weight_bytes"] / 1e6,
           "cache_MB_per_step": traffic["cache_bytes"] / 1e6, "ours_GB_s": ours_gb_s,
           "bandwidth_frac": ours_gb_s / bandwidth,
           "bandwidth_bound_tok_s": bandwidth * 1e9 / per_step * batch,
           **_split(t, n, per_step, _prefill_flops(model, cfg, batch, config.prompt_len),
                    limits)}
    log.append(row)
    for key in ("ours_tok_s", "transformers_tok_s", "ratio", "bandwidth_frac"):
      writer.add_scalar(f"{tag}/{key}", row[key], batch)
    logging.info("batch %d: ours %.1f tok/s, transformers %.1f tok/s, ratio %.2fx, %.1f GB/s "
                 "(%.0f%% of the probed bandwidth)", batch, row["ours_tok_s"],
                 row["transformers_tok_s"], row["ratio"], ours_gb_s, 100 * row["bandwidth_frac"])
  log.close()
  table = sorted(log.rows(), key=lambda r: r["batch"])
  for r in table:
    print(f"batch {r['batch']}: ours {r['ours_tok_s']:.1f} tok/s | transformers "
          f"{r['transformers_tok_s']:.1f} tok/s | ratio {r['ratio']:.2f}x "
          f"[{r['ratio_min']:.2f}-{r['ratio_max']:.2f}] | greedy agreement "
          f"{r['greedy_agree_frac']:.2f}" + _bandwidth_text(r))
  machine = timer.machine()
  summary = {"preset": config.preset, "params_M": cfg.num_params() / 1e6,
             "ratio_by_batch": {str(r["batch"]): timer.headline(r["ratio"]) for r in table},
             "bandwidth_frac_by_batch": {str(r["batch"]): timer.headline(r.get("bandwidth_frac"))
                                         for r in table},
             "decode_bandwidth_frac_by_batch": {
                 str(r["batch"]): timer.headline(r.get("decode_bandwidth_frac")) for r in table},
             "prefill_mfu_by_batch": {str(r["batch"]): timer.headline(r.get("prefill_mfu"))
                                      for r in table},
             "roofline": limits,
             "noisy": machine["noisy"], "machine": machine,
             "tokens": token_accounting(config.prompt_len, n, "response")}
  write_summary(workdir, summary, table, title=title,
                notes=f"{config.preset}, greedy, {n} new tokens after a {config.prompt_len}-token "
                      "prompt, float32 on CPU; tokens/s counts generated tokens only (batch x "
                      "new tokens per call, both sides); ratio = our median tokens/s / "
                      "transformers' median tokens/s. " + timer.note() + "\n\n"
                      + roofline.note(limits) + " read_MB_per_step: bytes one decode step must "
                      "read (every weight once, an untied embedding only for its gathered rows, "
                      "the decode cache's filled slots on average); ours_GB_s = that x our median "
                      "steps/s (tokens/s / batch, prefill included); bandwidth_frac = ours_GB_s / "
                      "the probed bandwidth; bandwidth_bound_tok_s: tokens/s at that bandwidth; "
                      "decode_* the same for the decode alone (the prefill side's median "
                      "seconds subtracted); prefill_mfu = prefill model FLOPs / prefill seconds / "
                      "the matmul peak.")
  return summary
