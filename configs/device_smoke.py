"""Device smoke: planned vs measured peak memory of one sharded SFT step and one GRPO step, at a
small and a medium random model (bfloat16 compute, float32 master weights and AdamW, remat "full").

On a GPU or TPU (it has not run on one yet; README "Running on GPUs and TPUs"):
python launch.py --config=configs/device_smoke.py --workdir=runs/device_smoke
CPU check (two tiny cases; CPU reports no memory statistics, so `measured` is null):
python launch.py --config=configs/device_smoke.py:debug=True --workdir=runs/device_smoke_debug
"""
import ml_collections

from configs import common

SMALL_TEST = dict(vocab_size=512, hidden_size=64, intermediate_size=128, num_layers=2,
                  num_heads=4, num_kv_heads=2, head_dim=16)


def get_config(arg=None):
  arg = common.parse_arg(arg, debug=False)
  c = ml_collections.ConfigDict()
  c.experiment = "device_smoke"
  c.seed = 0
  c.mesh = dict(data=1, fsdp=1)     # --config.mesh.fsdp=8 on 8 devices
  c.optim = dict(lr=1e-5, warmup_frac=0.0, schedule="constant", weight_decay=0.01, b1=0.9,
                 b2=0.999, clip_norm=1.0)
  if arg.debug:
    c.cases = [dict(name="small", preset="qwen3-tiny", overrides=SMALL_TEST, rows=4, seq_len=64),
               dict(name="medium", preset="qwen3-tiny",
                    overrides=dict(SMALL_TEST, num_layers=4), rows=4, seq_len=128)]
  else:   # 0.5B-class and 1.7B, the sizes the README's small GPU recipes use
    c.cases = [dict(name="small", preset="qwen3-0.6b", overrides={}, rows=8, seq_len=1024),
               dict(name="medium", preset="qwen3-1.7b", overrides={}, rows=8, seq_len=2048)]
  c.trainers = ["sft", "grpo"]
  c.response_len = 32 if arg.debug else 256
  return c
