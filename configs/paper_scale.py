"""Paper-scale presets (`scale=paper`): each paper's model size and batch / sequence settings as
the `model`, `mesh` and `plan` blocks of its training config, so `launch.py --plan` (and the plan
check every run does first) sees the real shapes without downloading weights.

  conpact   ConPAct-S/R SFT of one role (planner or actor, trained one after the other): Qwen3-8B
            (the language backbone of the paper's Qwen3-VL-8B; the vision tower is frozen and not
            planned), batch 8 x 4,096 tokens (configs/conpact/train.py), AdamW lr 1e-5 (Table 7),
            micro-batched to fit: one row per device per micro-batch (the paper gives no
            micro-batch size), so 8 accumulation steps on one device, none on 8.
  gencoord  GenCoord learned SFT: Qwen3.5-0.8B, micro 4 x accumulation 4 = effective batch 16,
            bfloat16, maximum length 2,048, lr 1e-5 (Supplement S10.1, Table S17, and the
            optimization table: "micro 4; accumulation 4; effective 16; bfloat16 on A100 40GB").
            On N > 1 devices the micro-batch must split over them:
            `--config.plan.micro_rows=<a multiple of N dividing 16>`.
  wm        the world-model audit's GRPO / OPSD on Qwen2.5-7B lives in configs/wm/train.py (its
            plan block depends on the condition).

Every preset trains float32 master weights with bfloat16 compute (`model.dtype`), float32 AdamW
moments, and per-layer rematerialisation (`model.remat="full"`). The mesh defaults to one device;
`--config.mesh.fsdp=8` spreads the state over 8 (see README "Running on GPUs and TPUs").

    from configs import paper_scale
    paper_scale.apply(c, "gencoord")          # inside a get_config, when arg.scale == "paper"
"""
from typing import Any

from lib.run.config_blocks import model_block, plan_block

SCALES = ("", "paper")
# micro_rows: rows per accumulation micro-batch; micro_per_device instead: that many rows per
# device of the mesh (micro_rows = micro_per_device x data x fsdp, following `--config.mesh.*`).
PRESETS: dict[str, dict[str, Any]] = {
    "conpact": dict(preset="qwen3-8b", rows=8, micro_per_device=1, seq_len=4096, lr=1e-5),
    "gencoord": dict(preset="qwen3.5-0.8b", rows=16, micro_rows=4, seq_len=2048, lr=1e-5),
}


def check_scale(scale: str) -> bool:
  """Whether `scale` asks for the paper-scale preset.

  Args:
    scale: the config's `scale` arg.
  Returns:
    True for "paper", False for "".
  Raises:
    ValueError: any other value (one line listing the valid ones).
  """
  if scale not in SCALES:
    raise ValueError(f"unknown scale {scale!r}; valid: '' (default), 'paper'")
  return scale == "paper"


def apply(c: Any, paper: str) -> Any:
  """Sets the paper-scale `model` (preset, bf16 compute, remat), `mesh` and `plan` (SFT step)
  blocks of config `c`, keeping its `model.checkpoint` (the weights of a real run).

  Args:
    c: a ConfigDict with a `model` block.
    paper: a key of PRESETS.
  Returns:
    c, changed in place.
  """
  p = PRESETS[paper]
  c.model = model_block(checkpoint=c.model.checkpoint, preset=p["preset"], dtype="bfloat16",
                        remat="full")
  c.mesh = dict(data=1, fsdp=1)
  micro = (p["micro_rows"] if "micro_rows" in p else
           p["micro_per_device"] * c.mesh.get_ref("data") * c.mesh.get_ref("fsdp"))
  c.optim = dict(lr=p["lr"], warmup_frac=0.03, schedule="cosine", weight_decay=0.01, b1=0.9,
                 b2=0.999, clip_norm=1.0)
  c.plan = plan_block(trainer="sft", rows=p["rows"], micro_rows=micro, seq_len=p["seq_len"])
  return c
