"""Memory plan of a training run, computed before any weight is allocated.

The model, its AdamW state, the frozen reference and the embedder are built as abstract arrays
(`nnx.eval_shape` / `jax.eval_shape`), the real train step (`lib.sft.step`, `lib.rl.grpo` or
`lib.rl.opsd`) is lowered and compiled for the configured ("data", "fsdp") mesh with abstract
inputs, and XLA's `memory_analysis()` gives the bytes one device needs. On CPU the mesh comes from
forced host devices (`XLA_FLAGS=--xla_force_host_platform_device_count=8`) and the device memory
from `plan.device_memory_gib`, so plans for 1 x 80 GB or 8 x 80 GB are computed on a laptop.

Config block `plan` (`lib.run.config_blocks.plan_block(**fields)` fills the defaults, rejects
unknown fields):
  trainer            "sft" | "grpo" | "opsd": which step is compiled
  rows               sequences per optimizer step (GRPO: prompts x group size)
  micro_rows         rows per accumulation micro-batch (0 = all rows at once)
  seq_len            tokens per row (prompt + response)
  response_len       scored response tokens per row (grpo / opsd; also the rollout's new tokens)
  reference          a frozen copy of the initial weights is resident (GRPO's KL reference; the
                     OPSD teacher is always counted, it is an argument of its step)
  embedder           a `lib.models` preset resident beside the policy ("" = none); embedder_dtype
  device_memory_gib  the target device's memory; 0 = ask the device (`memory_stats`)
  compile            False: analytic breakdown only (seconds instead of minutes for 30B models)
  check              before a run (`check_before_run`): "analytic" (default), "compile" or "off"
  target             "cpu" or "tpu:<chip>:<topology>" (lib/plan/compile_target.py)
  lengths            token lengths of the data's rows (or a sample); () = unknown, every row is
                     planned at seq_len (the maximum)
  padding            how the run pads rows: "max" (to seq_len), "longest" (to the longest row,
                     `lib.sft.batches.left_padded`) or "buckets" (`length_grouped` buckets of
                     `bucket_multiple` tokens, 0 = powers of two); with `lengths`, the step is
                     planned at the longest padded length and the roofline over all of them
  loss_chunk_tokens  tokens per chunk of the vocabulary-chunked head and loss (0 = full [rows, T,
                     V] logits; -1 = the trainers' default, `lib.models.chunked.LOSS_CHUNK_TOKENS`):
                     the compiled step is built with it and the analytic logits term counts it
  rollout_dtype      the weights the rollout samples from: "" = the float32 master weights,
                     "bfloat16" = a bf16 copy (`lib.generate.prefill.rollout_weights`); the KV
                     cache takes the same dtype
  prefill_rows       rows per prefill chunk of the rollout (0 = all rows at once)
  reference_dtype    the reference's / teacher's dtype ("" float32; the trainers' `frozen_dtype`)

Per device: `per_device_bytes` = the compiled step's arguments + outputs + temporaries - aliased
(donated) bytes, plus what lives outside the step (reference for GRPO, embedder, rollout KV
cache). The analytic breakdown beside it counts each resident piece from the shardings
(`lib/plan/memory_breakdown.py`).

    plan = memory_plan.compute(config)            # config with model, mesh, optim, plan blocks
    plan_table.write(plan, workdir)               # plan.json (strict JSON) + a printed table
"""
import dataclasses
import json
import os
import sys
from typing import Any

import jax
import jax.numpy as jnp
import ml_collections
from flax import nnx

from lib import models
from lib.models.chunked import LOSS_CHUNK_TOKENS
from lib.models.model_setup import compute_dtype
from lib.parallel import sharding
from lib.plan import compile_target, plan_table, rollout_plan
from lib.plan.memory_breakdown import (activation_estimate, kv_cache_bytes, padded_lengths,
                                       per_device_bytes)
from lib.rl import grpo, opsd
from lib.run.config_blocks import model_block, plan_block
from lib.sft import step as sft
from lib.train import optim
from lib.train.state import TrainState, nnx_apply_fn

GIB = 2**30
TRAINERS = ("sft", "grpo", "opsd")
CHECKS = ("analytic", "compile", "off")
DEFAULT_OPTIM = ml_collections.ConfigDict(dict(
    lr=1e-5, warmup_frac=0.0, schedule="constant", weight_decay=0.01, b1=0.9,
    b2=0.999, clip_norm=1.0))


def arch_config(block: Any):
  """The architecture of a `model` block without loading weights: the checkpoint's config.json
  when `checkpoint` is set, else `models.preset(preset, **overrides)`, as `build_model` builds it.

  Args:
    block: a `model` block (dict or ConfigDict).
  Returns:
    A QwenConfig or Qwen35Config.
  """
  block = model_block(**dict(block))
  if block["checkpoint"]:
    with open(os.path.join(block["checkpoint"], "config.json")) as f:
      hf = json.load(f)
    if hf.get("model_type", "").startswith("qwen3_5"):
      return models.Qwen35Config.from_hf(hf)
    return models.QwenConfig.from_hf(hf)
  return models.preset(block["preset"], **dict(block["overrides"]))


def abstract_model(config, dtype: str = "float32"):
  """The model of `config` with ShapeDtypeStruct leaves (nothing allocated).

  Args:
    config: a QwenConfig or Qwen35Config.
    dtype: the parameter dtype.
  Returns:
    An abstract Qwen / Qwen35 (`nnx.state(model, nnx.Param)` gives its parameter shapes).
  """
  return nnx.eval_shape(lambda: models.build(config, rngs=nnx.Rngs(0), dtype=dtype))


def _sds(shape, dtype, sh=None):
  return jax.ShapeDtypeStruct(shape, jnp.dtype(dtype), sharding=sh)


def _batch(trainer: str, p: dict, bsh) -> dict:
  """Abstract batch of the step `trainer` (dtypes of lib.sft.step / lib.rl.grpo / lib.rl.opsd)."""
  r, t, n = p["rows"], p["seq_len"], p["response_len"]
  ids = lambda length: _sds((r, length), jnp.int32, bsh)
  if trainer == "sft":
    return {"input_ids": ids(t), "attention_mask": ids(t), "loss_mask": ids(t)}
  if trainer == "grpo":
    return {"input_ids": ids(t), "attention_mask": ids(t), "response_mask": ids(n),
            "old_logp": _sds((r, n), jnp.float32, bsh), "ref_logp": _sds((r, n), jnp.float32, bsh),
            "advantages": _sds((r,), jnp.float32, bsh)}
  return {"student_ids": ids(t), "student_mask": ids(t), "teacher_ids": ids(t),
          "teacher_mask": ids(t), "tokens": ids(n), "loss_mask": ids(n),
          "old_logp": _sds((r, n), jnp.float32, bsh)}


@dataclasses.dataclass
class Plan:
  """The result of `compute`; `to_json()` is what plan.json holds."""
  model: str
  trainer: str
  mesh: dict
  per_device_bytes: int
  device_memory_bytes: int | None
  fits: bool | None
  compiled: bool
  breakdown: dict
  memory_analysis: dict | None
  target: str = "cpu"
  seq_len: int = 0               # the planned (longest padded) tokens per row
  padded_lengths: dict | None = None   # {padded length: rows} from plan.lengths (None: unknown)
  programs: dict | None = None   # per compiled program: memory, XLA cost, phase bytes
  estimate: dict | None = None   # TPU targets: roofline step time (compile_target.step_estimate)
  refused: dict | None = None   # TPU compiler's out-of-HBM refusal (compile_target.refusal)

  def to_json(self) -> dict:
    """The plan as a plain dict (dataclasses.asdict), for config.json or summary files."""
    return dataclasses.asdict(self)


def _device_memory(p: dict, target: compile_target.Target) -> int | None:
  if p["device_memory_gib"]:
    return int(p["device_memory_gib"] * GIB)
  if target.chip is not None:
    return target.chip.hbm_bytes
  stats = jax.devices()[0].memory_stats()   # None on CPU
  return int(stats["bytes_limit"]) if stats and "bytes_limit" in stats else None


def _memory(compiled) -> dict:
  mem = compiled.memory_analysis()
  return {k: int(getattr(mem, f"{k}_size_in_bytes")) for k in
          ("argument", "output", "temp", "alias", "generated_code")}


def _step_bytes(analysis: dict) -> int:
  return analysis["argument"] + analysis["output"] + analysis["temp"] - analysis["alias"]


def _program(compiled, analysis: dict) -> dict:
  """One compiled program's entry in `Plan.programs`: memory, per-device cost, roofline (TPU)."""
  # cost: XLA's per-device count, a loop's body once (see compile_target.step_estimate)
  return {"memory_analysis": analysis, "bytes": _step_bytes(analysis),
          "cost": compile_target.cost(compiled)}


def _step(trainer: str, apply_fn, tx, accum: int, params_sh, chunk: int):
  """The trainer's step as the sharded trainers jit it (gradients pinned to the params' shards),
  its loss over `chunk`-token chunks of the vocabulary head (0: full logits)."""
  if trainer == "sft":
    return sft.make_sft_step(apply_fn, tx, accum_steps=accum, param_sharding=params_sh,
                             loss_chunk_tokens=chunk)
  if trainer == "grpo":
    return grpo.make_grpo_step(apply_fn, tx, grpo.GRPOConfig(loss_chunk_tokens=chunk), accum,
                               params_sh)
  return opsd.make_opsd_step(apply_fn, tx, opsd.OPSDConfig(loss_chunk_tokens=chunk), accum,
                             params_sh)


def compute(config: Any, compile_step: bool | None = None) -> Plan:
  """The memory plan of a run config.

  Args:
    config: a run config with `model` and `plan` blocks, and normally `mesh` (data, fsdp; else
      one device) and `optim` (else AdamW: the state's shapes do not depend on its settings).
    compile_step: overrides `plan.compile` (False: analytic only).
  Returns:
    A Plan; `fits` None: the device memory is unknown (CPU without device_memory_gib).
  Raises:
    ValueError: an unknown trainer, or rows not divisible by data x fsdp or by micro_rows.
  """
  p = plan_block(**dict(config.plan))
  trainer = p["trainer"]
  if trainer not in TRAINERS:
    raise ValueError(f"unknown plan.trainer {trainer!r}; valid: {', '.join(TRAINERS)}")
  target = compile_target.parse(p["target"])
  # The data's length distribution, when given, sets the padded length the step is planned at.
  pads = padded_lengths(p["lengths"], p["seq_len"], p["padding"], p["bucket_multiple"])
  chunk = LOSS_CHUNK_TOKENS if p["loss_chunk_tokens"] < 0 else p["loss_chunk_tokens"]
  p = dict(p, seq_len=max(pads), loss_chunk_tokens=chunk)
  # No `mesh` block: one device (the trainers' default, lib.parallel.sharding.mesh_from_config), or
  # on a TPU target the whole slice as FSDP shards.
  shape = (config.mesh if "mesh" in config else
           dict(data=1, fsdp=target.chips if target.platform == "tpu" else 1))
  n_batch = shape["data"] * shape["fsdp"]
  if target.platform == "tpu" and n_batch != target.chips:
    raise ValueError(f"plan.target=tpu:{target.topology} has {target.chips} chips; the mesh "
                     f"data={shape['data']} x fsdp={shape['fsdp']} uses {n_batch} (set "
                     f"--config.mesh.fsdp={target.chips // shape['data'] or 1})")
  mesh = sharding.make_mesh(shape["data"], shape["fsdp"], devices=compile_target.devices(target))
  micro = p["micro_rows"] or p["rows"]
  if p["rows"] % micro or micro % n_batch:
    raise ValueError(f"plan.rows={p['rows']} must be a multiple of micro_rows={micro}, itself a "
                     f"multiple of data x fsdp = {n_batch}")
  arch = arch_config(config.model)
  remat = model_block(**dict(config.model))["remat"]
  # float32 master weights, as lib.train.setup.setup keeps them
  abstract = models.set_remat(abstract_model(arch), remat)
  apply_fn, params = nnx_apply_fn(abstract, compute_dtype=compute_dtype(config.model))
  params = jax.tree.map(lambda x: _sds(x.shape, x.dtype), params)
  # AdamW's state shapes do not depend on its settings (no `optim` block, e.g. `train.lr`: defaults)
  tx = optim.from_config(config.optim if "optim" in config else DEFAULT_OPTIM, 1)
  state = jax.eval_shape(lambda q: TrainState.create(q, tx), params)
  state_sh = sharding.state_shardings(state, mesh)
  params_sh = sharding.state_shardings(params, mesh)
  params_b = per_device_bytes(params, params_sh)
  frozen = jnp.dtype(p["reference_dtype"] or "float32")
  breakdown = {
      "params": params_b,
      "optimizer_state": per_device_bytes(state.opt_state, state_sh.opt_state),
      "gradients": params_b,
      # The GRPO reference / OPSD teacher: the initial weights, sharded like the params.
      "reference": params_b * frozen.itemsize // 4 if p["reference"] or trainer == "opsd" else 0,
      "embedder": 0,
      "kv_cache": 0,
      "activations": activation_estimate(arch, micro // n_batch, p["seq_len"], remat,
                                         p["loss_chunk_tokens"]),
  }
  if p["embedder"]:
    emb = abstract_model(arch_config(model_block(preset=p["embedder"])), p["embedder_dtype"])
    emb_params = nnx.state(emb, nnx.Param)
    breakdown["embedder"] = per_device_bytes(emb_params, sharding.state_shardings(emb_params, mesh))
  rollout_dtype = p["rollout_dtype"] or "float32"   # the sampler's weights set the cache's dtype
  if trainer != "sft":
    breakdown["kv_cache"] = kv_cache_bytes(arch, p["rows"] // n_batch, p["seq_len"],
                                           rollout_dtype)
    if p["rollout_dtype"]:   # the copy the rollout samples from, beside the master weights
      breakdown["rollout_weights"] = params_b * jnp.dtype(rollout_dtype).itemsize // 4
  outside = breakdown["embedder"] + breakdown["kv_cache"]
  outside += breakdown.get("rollout_weights", 0)   # 0 for SFT and float32 rollouts
  outside += breakdown["reference"] if trainer == "grpo" else 0   # not an argument of the step
  analysis = programs = estimate = None
  do_compile = target.platform == "tpu" or (p["compile"] if compile_step is None else compile_step)
  refused, stage = None, "train_step"
  if do_compile:
    try:
      bsh = sharding.batch_sharding(mesh)
      batch = _batch(trainer, p, bsh)
      step = _step(trainer, apply_fn, tx, p["rows"] // micro, params_sh, chunk)
      state_in = jax.tree.map(lambda x, sh: _sds(x.shape, x.dtype, sh), state, state_sh)
      if trainer == "opsd":
        teacher = jax.tree.map(lambda x, sh: _sds(x.shape, frozen, sh), params, params_sh)
        jitted = sharding.jit_teacher_step(step, mesh, state_sh, params_sh)
        compiled = jitted.lower(state_in, teacher, batch).compile()
      else:
        compiled = sharding.jit_step(step, mesh, state_sh).lower(state_in, batch).compile()
      analysis = _memory(compiled)
      programs = {"train_step": _program(compiled, analysis)}
      # The step's temporaries hold the gradients, activations and XLA scratch together.
      del breakdown["gradients"], breakdown["activations"]
      breakdown["step_temporaries"] = analysis["temp"]
      total = _step_bytes(analysis) + outside
      if target.platform == "tpu" and trainer != "sft" and p["response_len"]:
        # The rollout runs between updates with the train state resident: its compiled program
        # replaces the analytic KV-cache line, and the run needs the larger of the two phases.
        stage = "rollout"
        rollout = rollout_plan.compile_rollout(
            abstract, params, params_sh, mesh, rows=p["rows"],
            prompt_len=p["seq_len"] - p["response_len"], new_tokens=p["response_len"],
            weights_dtype=p["rollout_dtype"], prefill_rows=p["prefill_rows"])
        r_mem = _memory(rollout)
        programs["rollout"] = _program(rollout, r_mem)
        copy = breakdown.pop("rollout_weights", 0)   # an argument of the rollout program
        train_phase = total - breakdown.pop("kv_cache") - copy
        # its float32 weight argument is the state's params, resident already; a bf16 copy is not
        breakdown["rollout_program"] = _step_bytes(r_mem) - (0 if copy else params_b)
        rollout_phase = (per_device_bytes(state, state_sh) + breakdown["embedder"]
                         + breakdown["reference"] + breakdown["rollout_program"])
        programs["train_step"]["phase_bytes"] = int(train_phase)
        programs["rollout"]["phase_bytes"] = int(rollout_phase)
        total = max(train_phase, rollout_phase)
      if target.chip is not None:
        estimate = _estimate(target, arch, abstract, p, pads, remat, params, rollout_dtype,
                             n_batch)
    except Exception as e:  # pylint: disable=broad-except  (refusal re-raises all but OOM)
      refused = compile_target.refusal(e, stage, breakdown)
      total, analysis, programs, estimate = sum(breakdown.values()), None, None, None
  else:
    total = sum(breakdown.values())
  device = _device_memory(p, target)
  block = model_block(**dict(config.model))
  name = block["checkpoint"] or block["preset"]
  return Plan(model=name, trainer=trainer, mesh={k: int(v) for k, v in mesh.shape.items()},
              per_device_bytes=int(total), device_memory_bytes=device,
              fits=(False if refused else None if device is None else bool(total <= device)),
              compiled=bool(do_compile),
              breakdown={k: int(v) for k, v in breakdown.items()}, memory_analysis=analysis,
              target=p["target"], seq_len=int(p["seq_len"]),
              padded_lengths=({int(k): int(v) for k, v in pads.items()} if p["lengths"] else None),
              programs=programs, estimate=estimate, refused=refused)


def _estimate(target, arch, model, p: dict, pads: dict, remat: str, params, rollout_dtype: str,
              n_batch: int) -> dict:
  """`compile_target.step_estimate` averaged over the padded lengths of the data (a step's rows
  share one padded length; with buckets, a bucket is drawn in proportion to its rows)."""
  weights = per_device_bytes(params) * jnp.dtype(rollout_dtype).itemsize // 4
  total = sum(pads.values())
  out = {"update_s": 0.0, "rollout_s": None, "step_s": 0.0, "kind": "roofline estimate"}
  for length, count in pads.items():
    q = dict(p, seq_len=length)
    cache = kv_cache_bytes(arch, p["rows"] // n_batch, length, rollout_dtype)
    e = compile_target.step_estimate(target, arch, model, q, remat, weights, cache)
    for k in ("update_s", "rollout_s", "step_s"):
      if e[k] is not None:
        out[k] = (out[k] or 0.0) + e[k] * count / total
  return out


def plan_for_launch(config: Any, workdir: str) -> Plan | None:
  """`launch.py --plan`: computes and writes the plan of `config`, or says in one line that its
  experiment has none (no `plan` block).

  Args:
    config: the resolved run config.
    workdir: where plan.json goes.
  Returns:
    The Plan, or None when the config has no `plan` block.
  """
  if "plan" not in config:
    print(f"launch.py: no plan for this experiment ({config.experiment}: its config has no "
          "`plan` block)", flush=True)
    return None
  try:
    plan = compute(config)
  except (KeyError, ValueError) as e:   # a plan block that contradicts the mesh: launch's exit 2
    print(f"launch.py: error: {str(e).strip(chr(39))}", file=sys.stderr, flush=True)
    raise SystemExit(2) from None
  plan_table.write(plan, workdir)
  return plan


def check_before_run(config: Any) -> Plan | None:
  """The plan check a normal run does first (launch.py, before the workdir is created): stops
  with one line when the config's plan says it does not fit.

  Args:
    config: the resolved run config.
  Returns:
    The Plan (None without a `plan` block or with `plan.check="off"`); `fits` None (the device
    memory is unknown, e.g. CPU without `plan.device_memory_gib`) lets the run go on.
  Raises:
    SystemExit(2): after one line on stderr, when the plan does not fit or contradicts the mesh.
  """
  if "plan" not in config:
    return None
  check = plan_block(**dict(config.plan))["check"]
  if check not in CHECKS:
    _stop(f"unknown plan.check {check!r}; valid: {', '.join(CHECKS)}")
  if check == "off":
    return None
  try:
    plan = compute(config, compile_step=check == "compile")
  except (KeyError, ValueError) as e:
    _stop(str(e).strip(chr(39)))
  if plan.fits is False:
    mesh = " x ".join(f"{k}={v}" for k, v in plan.mesh.items())
    kind = "compiled" if plan.compiled else "analytic"
    need, have = (plan_table.size_text(b) for b in (plan.per_device_bytes,
                                                    plan.device_memory_bytes))
    _stop(f"{plan.model} ({plan.trainer}) needs {need} per device on mesh {mesh}, the device has "
          f"{have} ({kind} plan; see --plan, or --config.plan.check=off to run anyway)")
  return plan


def _stop(message: str):
  print(f"launch.py: error: {message}", file=sys.stderr, flush=True)
  raise SystemExit(2)
