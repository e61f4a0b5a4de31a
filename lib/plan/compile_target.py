"""Where `--plan` compiles a step: this machine's devices, or a TPU slice this machine does not have.

`plan.target` names it:
  "cpu"              the local devices (on CPU, `XLA_FLAGS=--xla_force_host_platform_device_count=N`
                     makes N of them); today's compiled plan.
  "tpu:<topology>"   a TPU slice by its topology name, e.g. "tpu:v5e:2x2" (4 chips), "tpu:v5e:4x4",
                     "tpu:v5p:2x2x1", "tpu:v6e:2x2"; one chip: "tpu:v6e:1x1", "tpu:v5e:1x1",
                     "tpu:v5p:1x1x1". libtpu's compiler (the `[tpu]` extra) builds
                     the program for those chips without any being attached
                     (`jax.experimental.topologies`), the way MaxText's `train_compile.py` checks a
                     model fits a slice before anyone pays for it. `memory_analysis()` then gives
                     the per-chip bytes that TPU's compiler assigns, remat's recomputation included.
  "gpu:..."          refused with the reason: the CUDA plugin needs a driver and a device to compile
                     (docs/gpu.md, "Compiling for a GPU without one").

The chip table holds each TPU generation's published per-chip figures (HBM, bf16 peak FLOP/s, HBM
bandwidth, from the Cloud TPU system-architecture pages): the HBM is what `fits` compares against,
the other two feed `step_estimate`, a roofline estimate, not a measurement.
"""
import dataclasses
import importlib.util
import os
import re
from typing import Any

from lib.plan import roofline
from lib.plan.memory_breakdown import full_attention_layers
from lib.run import console

GIB = 2**30


@dataclasses.dataclass(frozen=True)
class Chip:
  """Published per-chip figures of one TPU generation."""
  name: str             # the topology prefix, e.g. "v5e"
  device_kind: str      # what libtpu's devices report, checked after the topology is built
  hbm_bytes: int
  bf16_flops: float     # peak dense bf16 FLOP/s
  hbm_bytes_per_s: float


CHIPS = {c.name: c for c in (
    Chip("v4", "TPU v4", 32 * GIB, 275e12, 1228e9),
    Chip("v5e", "TPU v5 lite", 16 * GIB, 197e12, 819e9),
    Chip("v5p", "TPU v5", 95 * GIB, 459e12, 2765e9),
    Chip("v6e", "TPU v6 lite", 32 * GIB, 918e12, 1640e9),
)}


# Dense bf16 peak FLOP/s of the GPUs the device smoke run may meet (vendor data sheets, without
# sparsity), matched against `device_kind` in this order (the H100 PCIe before the SXM's name).
GPU_BF16_FLOPS = (("H100 PCIe", 756e12), ("H100", 989e12), ("H200", 989e12), ("A100", 312e12),
                  ("L40S", 362e12), ("A10G", 70e12))


def peak_bf16_flops(device_kind: str) -> float | None:
  """A device's dense bf16 peak FLOP/s from its `device_kind` (TPU chips from CHIPS, GPUs from
  GPU_BF16_FLOPS), or None for a device without a published figure here (CPU)."""
  for chip in CHIPS.values():
    if device_kind == chip.device_kind:
      return chip.bf16_flops
  return next((flops for name, flops in GPU_BF16_FLOPS if name in device_kind), None)


@dataclasses.dataclass(frozen=True)
class Target:
  """A parsed `plan.target`."""
  platform: str         # "cpu" or "tpu"
  topology: str = ""    # "v5e:2x2" for "tpu:v5e:2x2"

  @property
  def chip(self) -> Chip | None:
    """The chip of a TPU target (None on CPU)."""
    return CHIPS[self.topology.split(":")[0]] if self.platform == "tpu" else None

  @property
  def chips(self) -> int:
    """Chips in the slice: the product of the topology's dimensions (0 on CPU)."""
    if self.platform != "tpu":
      return 0
    n = 1
    for d in self.topology.split(":")[1].split("x"):
      n *= int(d)
    return n


def parse(target: str) -> Target:
  """Reads `plan.target`.

  Args:
    target: "cpu", "tpu:<chip>:<AxB[xC]>" or "gpu:...".
  Returns:
    A Target.
  Raises:
    ValueError: an unknown platform or chip, a malformed topology, or a GPU target.
  """
  if target == "cpu":
    return Target("cpu")
  platform, _, rest = target.partition(":")
  if platform == "gpu":
    raise ValueError(f"plan.target={target!r}: the CUDA plugin cannot compile without a GPU and "
                     "its driver (docs/gpu.md, 'Compiling for a GPU without one'); use "
                     "target=cpu or a tpu:<topology>")
  if platform != "tpu":
    raise ValueError(f"unknown plan.target {target!r}; valid: cpu, tpu:<chip>:<topology> "
                     f"(chips {', '.join(CHIPS)}), e.g. tpu:v5e:2x2")
  chip, _, dims = rest.partition(":")
  if chip not in CHIPS:
    raise ValueError(f"plan.target={target!r}: unknown TPU chip {chip!r}; known: "
                     f"{', '.join(CHIPS)}")
  parts = dims.split("x")
  if not dims or len(parts) not in (2, 3) or not all(p.isdigit() and int(p) > 0 for p in parts):
    raise ValueError(f"plan.target={target!r}: the topology must be <chip>:AxB or <chip>:AxBxC "
                     "(chips per dimension), e.g. tpu:v5e:4x4 or tpu:v5p:2x2x1")
  return Target("tpu", f"{chip}:{dims}")


def devices(target: Target) -> list | None:
  """The devices to lay the mesh on: None (the local `jax.devices()`) for CPU, else the slice's
  abstract TPU devices.

  Args:
    target: a parsed target.
  Returns:
    None, or the topology's devices (they compile; they cannot run or hold arrays).
  Raises:
    ValueError: libtpu is not installed, or it rejects the topology or reports another chip.
  """
  if target.platform == "cpu":
    return None
  if importlib.util.find_spec("libtpu") is None:
    raise ValueError(f"plan.target=tpu:{target.topology} needs the TPU compiler: "
                     "pip install -e '.[tpu]' (jax[tpu] at the pinned jax version)")
  console.quiet_libtpu_off_tpu_host()
  # jax.experimental.topologies initialises the TPU plugin on import: only once libtpu is there.
  from jax.experimental import topologies
  # One chip: libtpu's default host shape (2x2x1 chips per host) does not divide a 1x1 slice.
  bounds = dict(chips_per_host_bounds=(1, 1, 1)) if target.chips == 1 else {}
  try:
    desc = topologies.get_topology_desc(topology_name=target.topology, platform="tpu", **bounds)
  except Exception as e:   # libtpu's own message (unknown shape for the chip, ...), on one line
    raise ValueError(f"plan.target=tpu:{target.topology}: libtpu cannot build this topology: "
                     f"{' '.join(str(e).split())[:300]}") from None
  devs = list(desc.devices)
  kind = devs[0].device_kind
  if kind != target.chip.device_kind:
    raise ValueError(f"plan.target=tpu:{target.topology}: libtpu built {kind!r} devices, expected "
                     f"{target.chip.device_kind!r}")
  return devs


_UNITS = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def out_of_hbm(error: BaseException) -> tuple[int, int] | None:
  """The TPU compiler's refusal of a program that cannot fit the chip, read from its error.

  libtpu's buffer assignment raises RESOURCE_EXHAUSTED ("... memory required for HLO temporaries
  (18.57G) exceeds available HBM (15.75G)") instead of returning a memory analysis.

  Args:
    error: an exception raised by `lowered.compile()`.
  Returns:
    (bytes of temporaries needed, bytes available), or None for any other error.
  """
  m = re.search(r"RESOURCE_EXHAUSTED.*?temporaries \(([\d.]+)([KMGT])\).*?available HBM "
                r"\(([\d.]+)([KMGT])\)", str(error), re.S)
  if m is None:
    return None
  return (int(float(m.group(1)) * _UNITS[m.group(2)]), int(float(m.group(3)) * _UNITS[m.group(4)]))


def refusal(error: BaseException, program: str, breakdown: dict) -> dict:
  """Turns the TPU compiler's out-of-HBM refusal into a plan: the program's temporaries (what it
  asked for) replace its analytic lines in `breakdown`, so their sum is a lower bound.

  Args:
    error: raised by `compile()` for `program` ("train_step" or "rollout").
    program: which program it was.
    breakdown: the plan's breakdown, updated in place.
  Returns:
    {"program", "temp_bytes", "available_bytes"}.
  Raises:
    The error itself when it is not an out-of-HBM refusal.
  """
  shortfall = out_of_hbm(error)
  if shortfall is None:
    raise error
  drop = ("gradients", "activations") + (("kv_cache", "step_temporaries")
                                         if program == "rollout" else ())
  for key in drop:
    breakdown.pop(key, None)
  breakdown[f"{program}_temporaries"] = shortfall[0]
  return {"program": program, "temp_bytes": shortfall[0], "available_bytes": shortfall[1]}


def cost(compiled: Any) -> dict:
  """FLOPs and bytes of one device's program from XLA's cost analysis.

  Args:
    compiled: a `jax.stages.Compiled`.
  Returns:
    {"flops": float | None, "bytes_accessed": float | None} (None where the compiler reports none).
  """
  analysis = compiled.cost_analysis()
  if isinstance(analysis, (list, tuple)):   # older JAX: one dict per program
    analysis = analysis[0] if analysis else {}
  analysis = analysis or {}
  get = lambda k: float(analysis[k]) if k in analysis and analysis[k] >= 0 else None
  return {"flops": get("flops"), "bytes_accessed": get("bytes accessed")}


def step_estimate(target: Target, arch: Any, model: Any, plan: dict, remat: str,
                  params_bytes: int, cache_bytes_per_device: int) -> dict:
  """Roofline estimate of one training iteration on the slice, from the model's FLOPs and the
  chip's published peak FLOP/s and HBM bandwidth; communication, bubbles and sub-peak kernels are
  left out, so a real step is slower. (The compiled programs' `cost_analysis()` counts a loop's
  body once, the micro-batch scan and the decode `while_loop` included, so it cannot give these.)

  update_s  = F_update x (4/3 with remat="full": the forward runs twice) / chips / peak, with
              F_update = `lib.plan.roofline.update_flops` over every row of the step.
  rollout_s = F_prefill / chips / peak + new_tokens x (whole weights + this chip's KV cache) / HBM
              bandwidth: under FSDP every chip all-gathers and reads all the weights each decode
              step (GRPO / OPSD with response_len only).

  Args:
    target: a TPU target. arch: the model's config. model: the abstract model.
    plan: the filled `plan` block. remat: the model block's remat policy.
    params_bytes: the whole (unsharded) weights the sampler reads, in their dtype.
    cache_bytes_per_device: one chip's KV cache at full length.
  Returns:
    {"update_s", "rollout_s" (None for SFT), "step_s", "kind": "roofline estimate"}.
  """
  chip, n = target.chip, target.chips
  matmul = roofline.matmul_params(model, arch)
  layers = full_attention_layers(arch)
  update = roofline.update_flops(matmul_params=matmul, layers=layers, heads=arch.num_heads,
                                 head_dim=arch.head_dim, batch=plan["rows"],
                                 seq_len=plan["seq_len"])
  update_s = update * (4 / 3 if remat == "full" else 1.0) / n / chip.bf16_flops
  rollout_s = None
  if plan["trainer"] != "sft" and plan["response_len"]:
    prefill = roofline.prefill_flops(
        matmul_params=matmul, head_params=arch.vocab_size * arch.hidden_size,
        attention_layers=layers, heads=arch.num_heads, head_dim=arch.head_dim,
        batch=plan["rows"], prompt_len=plan["seq_len"] - plan["response_len"])
    rollout_s = (prefill / n / chip.bf16_flops + plan["response_len"] *
                 (params_bytes + cache_bytes_per_device) / chip.hbm_bytes_per_s)
  return {"update_s": update_s, "rollout_s": rollout_s,
          "step_s": update_s + (rollout_s or 0.0), "kind": "roofline estimate"}
