"""Planned vs measured device memory: for each case of `config.cases` and each of its trainers
("sft", "grpo"), the analytic and the compiled memory plans (lib/plan/memory_plan.py) and two real
update steps on the device with random weights and tokens, then the device's peak bytes
(`memory_stats()["peak_bytes_in_use"]`, the maximum over the mesh's devices) and the second
step's wall time.

Peak counters only grow within a process, so cases run from small to large and each row also
records the peak before its steps; for exact per-row peaks run one row per process (the config's
`case=` and `trainer=` args). `measured_bytes` is null where the platform reports no memory
statistics (CPU), and the ratios with it. Beside tokens/s, MFU: the step's model FLOPs
(`lib.plan.roofline.update_flops`: 6 N T plus causal attention, without remat's recomputation)
over the step time x devices x one device's dense bf16 peak (`compile_target.peak_bf16_flops`;
null where the device has no published peak here, e.g. CPU). Results: results.jsonl (one row per
case x trainer), summary.json / summary.md.
"""
import time

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np

from lib.models.model_setup import build_model
from lib.parallel import sharding
from lib.plan import compile_target, memory_plan, roofline
from lib.plan.memory_breakdown import full_attention_layers
from lib.rl import grpo
from lib.run.config_blocks import model_block, plan_block
from lib.run.results import ResultsLog, write_summary
from lib.sft import step as sft
from lib.train import optim, setup as train_loop
from lib.train.state import nnx_apply_fn

GIB = 2**30


def _peak() -> int | None:
  stats = [d.memory_stats() for d in jax.local_devices()]
  if any(s is None or "peak_bytes_in_use" not in s for s in stats):
    return None
  return max(int(s["peak_bytes_in_use"]) for s in stats)


def _stats() -> dict | None:
  """The first device's allocator counters (bytes in use, peak, limit), or None (CPU)."""
  s = jax.local_devices()[0].memory_stats()
  keys = ("bytes_in_use", "peak_bytes_in_use", "bytes_limit")
  return None if s is None else {k: int(s[k]) for k in keys if k in s}


def measure_or_oom(c, seed: int) -> dict:
  """`measure`, or, when the device runs out of memory, a row with the failure code
  "device_oom", the allocator's own line and its counters at the failure (the run goes on).

  Raises:
    Any other error of the step.
  """
  try:
    return measure(c, seed)
  except jax.errors.JaxRuntimeError as e:
    if "RESOURCE_EXHAUSTED" not in str(e):
      raise
    return {"error": "device_oom", "error_detail": str(e).strip().splitlines()[0][:400],
            "memory_at_failure": _stats(), "measured_bytes": None, "loss": None,
            "step_s": None, "tokens_per_s": None}


def case_config(config, case: dict, trainer: str) -> ml_collections.ConfigDict:
  """The run config of one case: bf16 compute, remat "full", the plan of one update step."""
  c = ml_collections.ConfigDict()
  c.model = model_block(preset=case["preset"], overrides=dict(case["overrides"]),
                        dtype="bfloat16", remat="full")
  c.mesh = dict(config.mesh)
  c.optim = dict(config.optim)
  devices = config.mesh.data * config.mesh.fsdp
  rows = case["rows"] * (devices if case["rows_per_device"] else 1)
  c.plan = plan_block(trainer=trainer, rows=rows, seq_len=case["seq_len"],
                      micro_rows=case["micro_rows"] * (devices if case["rows_per_device"] else 1),
                      response_len=(case["response_len"] or config.response_len
                                    if trainer == "grpo" else 0),
                      reference=trainer == "grpo")
  return c


def model_flops(c) -> int:
  """Model FLOPs of one update of case config `c` (`roofline.update_flops` over all its rows)."""
  arch = memory_plan.arch_config(c.model)
  return roofline.update_flops(
      matmul_params=roofline.matmul_params(memory_plan.abstract_model(arch), arch),
      layers=full_attention_layers(arch), heads=arch.num_heads, head_dim=arch.head_dim,
      batch=c.plan.rows, seq_len=c.plan.seq_len)


def _batch(trainer: str, rows: int, t: int, n: int, vocab: int, rng) -> dict:
  ids = rng.integers(3, vocab, (rows, t)).astype(np.int32)
  ones = np.ones((rows, t), np.int32)
  if trainer == "sft":
    return {"input_ids": ids, "attention_mask": ones, "loss_mask": ones}
  logp = np.full((rows, n), -5.0, np.float32)
  return {"input_ids": ids, "attention_mask": ones, "response_mask": np.ones((rows, n), np.int32),
          "old_logp": logp, "ref_logp": logp,
          "advantages": rng.normal(size=(rows,)).astype(np.float32)}


def measure(c, seed: int) -> dict:
  """One real update step of config `c` on the device; the peak bytes before and after it."""
  tx = optim.from_config(c.optim, 10)
  model, _, _ = build_model(c.model, seed=seed)
  apply_fn, params = nnx_apply_fn(model, compute_dtype=jnp.bfloat16)
  mesh = sharding.make_mesh(c.mesh.data, c.mesh.fsdp)
  state, state_sh = train_loop.create_state(params, tx, mesh)
  del model, params
  trainer, p = c.plan.trainer, c.plan
  accum = p.rows // (p.micro_rows or p.rows)
  if trainer == "sft":
    step = sft.make_sft_step(apply_fn, tx, accum_steps=accum, param_sharding=state_sh.params)
  else:
    step = grpo.make_grpo_step(apply_fn, tx, grpo.GRPOConfig(), accum, state_sh.params)
    reference = jax.tree.map(jnp.copy, state.params)     # resident, as in a GRPO run
  batch = _batch(trainer, p.rows, p.seq_len, p.response_len,
                 memory_plan.arch_config(c.model).vocab_size, np.random.default_rng(seed))
  batch = sharding.shard_batch(batch, mesh)
  before = _peak()
  jitted = sharding.jit_step(step, mesh, state_sh)
  t0 = time.perf_counter()
  state, metrics = jitted(state, batch)
  loss = float(metrics["loss"])
  t1 = time.perf_counter()
  state, metrics = jitted(state, batch)     # steady state: compiled, same shapes
  jax.block_until_ready((state, metrics))
  t2 = time.perf_counter()
  after = _peak()
  del state, batch
  if trainer == "grpo":
    del reference
  return {"peak_before_bytes": before, "measured_bytes": after, "loss": loss,
          "step_s_with_compile": t1 - t0, "step_s": t2 - t1,
          "tokens_per_s": p.rows * p.seq_len / (t2 - t1)}


def _round(x: float | None, digits: int = 0) -> float | None:
  return None if x is None else round(x, digits or None)


def run(config, workdir):
  log = ResultsLog(workdir, key=("case",))
  done = {r["case"]: r for r in log.rows()}
  rows = []
  for case in config.cases:
    for trainer in [t for t in config.trainers if t in case["trainers"]]:
      key = f"{case['name']}/{trainer}"
      if key in done:
        rows.append(done[key])
        continue
      c = case_config(config, case, trainer)
      flops = model_flops(c)
      analytic = memory_plan.compute(c, compile_step=False)
      plan = memory_plan.compute(c, compile_step=True)
      device = jax.devices()[0]
      row = {"case": key, "preset": case["preset"], "rows": c.plan.rows,
             "micro_rows": c.plan.micro_rows or c.plan.rows,
             "seq_len": case["seq_len"], "mesh": plan.mesh, "platform": device.platform,
             "device_kind": device.device_kind, "analytic_bytes": analytic.per_device_bytes,
             "planned_bytes": plan.per_device_bytes,
             "planned_temp_bytes": (plan.memory_analysis or {}).get("temp"),
             "device_memory_bytes": plan.device_memory_bytes, **measure_or_oom(c, config.seed)}
      peak = compile_target.peak_bf16_flops(device.device_kind)
      row.update(model_flops=flops, peak_bf16_flops=peak,
                 mfu=(None if peak is None or row["step_s"] is None else roofline.mfu(
                     model_flops=flops, seconds=row["step_s"], devices=jax.device_count(),
                     peak_flops=peak)))
      measured = row["measured_bytes"]
      row["measured_over_planned"] = None if measured is None else measured / plan.per_device_bytes
      row["measured_over_analytic"] = (None if measured is None
                                       else measured / analytic.per_device_bytes)
      log.append(row)
      rows.append(row)
  log.close()
  measured = [r for r in rows if r["measured_bytes"] is not None]
  summary = {"platform": jax.devices()[0].platform, "device_kind": jax.devices()[0].device_kind,
             "devices": jax.device_count(),
             "cases": len(rows), "measured_coverage": len(measured),
             "device_oom": [r["case"] for r in rows if r.get("error") == "device_oom"],
             "max_measured_over_planned": max((r["measured_over_planned"] for r in measured),
                                              default=None)}
  table = [{"case": r["case"], "analytic GiB": round(r["analytic_bytes"] / GIB, 3),
            "compiled plan GiB": round(r["planned_bytes"] / GIB, 3),
            "measured GiB": None if r["measured_bytes"] is None
            else round(r["measured_bytes"] / GIB, 3),
            "measured / compiled": r["measured_over_planned"],
            "measured / analytic": r["measured_over_analytic"], "step s": _round(r["step_s"], 4),
            "tokens/s": _round(r["tokens_per_s"]), "MFU": _round(r.get("mfu"), 4),
            "loss": r["loss"],
            "error": r.get("error")} for r in rows]
  write_summary(workdir, summary, table, title="Device smoke: planned vs measured memory",
                notes="measured = the device's peak bytes in use after two update steps (max over "
                      "devices); null where the platform reports no memory statistics (CPU). "
                      "step s = the second step's wall time (compiled). MFU = model FLOPs (6 N T + "
                      "causal attention) / (step s x devices x the device's bf16 peak); null "
                      "without a published peak (CPU).")
  return summary
