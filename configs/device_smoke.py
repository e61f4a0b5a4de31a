"""Device smoke: planned (analytic and compiled) vs measured peak memory, and the step time, of
one sharded SFT step and one GRPO step at a small and a medium random model, plus the GenCoord
paper-scale SFT step (Qwen3.5-0.8B, 16 x 2,048 tokens) on one device (bfloat16 compute, float32
master weights and AdamW, remat "full").

On a GPU or TPU, one process per row (peak counters only grow within a process; docs/gpu.md
"Device smoke run" has the measured table and the loop over rows):
python launch.py --config=configs/device_smoke.py:case=small,trainer=sft --workdir=runs/ds_small_sft
All rows in one process (each row's peak is then at least every earlier row's):
python launch.py --config=configs/device_smoke.py --workdir=runs/device_smoke
CPU check (two tiny cases; CPU reports no memory statistics, so `measured` is null):
python launch.py --config=configs/device_smoke.py:debug=True --workdir=runs/device_smoke_debug
"""
import ml_collections

from configs import common

SMALL_TEST = dict(vocab_size=512, hidden_size=64, intermediate_size=128, num_layers=2,
                  num_heads=4, num_kv_heads=2, head_dim=16)
TRAINERS = ("sft", "grpo")


def get_config(arg=None):
  arg = common.parse_arg(arg, debug=False, case="", trainer="")
  c = ml_collections.ConfigDict()
  c.experiment = "device_smoke"
  c.seed = 0
  c.mesh = dict(data=1, fsdp=1)     # --config.mesh.fsdp=8 on 8 devices
  c.optim = dict(lr=1e-5, warmup_frac=0.0, schedule="constant", weight_decay=0.01, b1=0.9,
                 b2=0.999, clip_norm=1.0)
  if arg.debug:
    cases = [dict(name="small", preset="qwen3-tiny", overrides=SMALL_TEST, rows=4, seq_len=64),
             dict(name="medium", preset="qwen3-tiny",
                  overrides=dict(SMALL_TEST, num_layers=4), rows=4, seq_len=128)]
  else:   # 0.5B-class and 1.7B, the sizes the small GPU recipes use; then GenCoord at paper scale
    cases = [dict(name="small", preset="qwen3-0.6b", overrides={}, rows=8, seq_len=1024),
             dict(name="medium", preset="qwen3-1.7b", overrides={}, rows=8, seq_len=2048),
             dict(name="gencoord_paper", preset="qwen3.5-0.8b", overrides={}, rows=16,
                  seq_len=2048, trainers=["sft"])]   # configs/paper_scale.py PRESETS["gencoord"]
  names = [k["name"] for k in cases]
  if arg.case and arg.case not in names:
    raise common.ConfigArgError(f"unknown case {arg.case!r}; valid: {', '.join(names)}")
  if arg.trainer and arg.trainer not in TRAINERS:
    raise common.ConfigArgError(f"unknown trainer {arg.trainer!r}; valid: {', '.join(TRAINERS)}")
  c.cases = [k for k in cases if arg.case in ("", k["name"])]
  c.trainers = [t for t in TRAINERS if arg.trainer in ("", t)]
  c.response_len = 32 if arg.debug else 256
  return c
