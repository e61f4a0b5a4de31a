"""What a memory plan (`lib.plan.memory_plan.Plan`) shows a person: a short fixed-width table, and
<workdir>/plan.json beside it."""
import json
import os

GIB = 2**30


def size_text(b: int | None) -> str:
  """Bytes as GiB (or MiB below 0.1 GiB); "–" for an unknown size."""
  if b is None:
    return "–"
  return f"{b / GIB:.2f} GiB" if b >= GIB // 10 else f"{b / 2**20:.2f} MiB"


def table(plan) -> str:
  """A short fixed-width table of the plan.

  Args:
    plan: a Plan.
  Returns:
    One header line, one line per breakdown entry and the per-device total with `fits`.
  """
  mesh = " x ".join(f"{k}={v}" for k, v in plan.mesh.items())
  kind = ("analytic" if not plan.compiled else "compiled step" if plan.target == "cpu"
          else f"compiled for {plan.target}")
  lines = [f"memory plan: {plan.model} ({plan.trainer}), mesh {mesh}, {kind}"]
  if plan.padded_lengths:
    rows = sum(plan.padded_lengths.values())
    mean = sum(k * v for k, v in plan.padded_lengths.items()) / rows
    lines.append(f"  rows padded to {plan.seq_len} tokens at most (mean {mean:.0f}, from {rows} "
                 "rows' lengths)")
  lines += [f"  {k:<16} {size_text(v):>12}" for k, v in plan.breakdown.items()]
  for name, prog in (plan.programs or {}).items():
    flops = prog["cost"]["flops"]
    line = f"  {name}: {size_text(prog['bytes'])} program"
    if "phase_bytes" in prog:
      line += f", {size_text(prog['phase_bytes'])} with what stays resident"
    line += f", XLA cost {flops / 1e12:.3g} TFLOP per device" if flops is not None else ""
    lines.append(line)
  if plan.refused:
    r = plan.refused
    lines.append(f"  {r['program']}: refused by the TPU compiler, its temporaries alone need "
                 f"{size_text(r['temp_bytes'])} of the {size_text(r['available_bytes'])} it can use "
                 "(per device below is a lower bound)")
  if plan.estimate:
    e = plan.estimate
    rollout = f", rollout {e['rollout_s']:.3g} s" if e["rollout_s"] is not None else ""
    lines.append(f"  roofline estimate: update {e['update_s']:.3g} s{rollout}, step "
                 f"{e['step_s']:.3g} s (peak FLOP/s and HBM bandwidth, no communication)")
  lines.append(f"  {'per device':<16} {size_text(plan.per_device_bytes):>12} of "
               f"{size_text(plan.device_memory_bytes)} -> fits: {plan.fits}")
  return "\n".join(lines)


def write(plan, workdir: str) -> str:
  """Writes <workdir>/plan.json (strict JSON) and prints `table(plan)`.

  Args:
    plan: a Plan.
    workdir: the run directory (created if missing).
  Returns:
    The path of plan.json.
  """
  os.makedirs(workdir, exist_ok=True)
  path = os.path.join(workdir, "plan.json")
  with open(path, "w") as f:
    json.dump(plan.to_json(), f, indent=2, allow_nan=False)
  print(table(plan), flush=True)
  return path
