"""Device smoke: planned (analytic and compiled) vs measured peak memory, the step time, tokens/s
and MFU, of one sharded SFT step and one GRPO step at a small and a medium random model, plus the
GenCoord paper-scale SFT step (Qwen3.5-0.8B, 16 x 2,048 tokens in one micro-batch), the GenCoord
paper's recipe at its real shape (micro 4 x accumulation 4 = 16 rows x 2,048 tokens) and one
Qwen2.5-7B GRPO micro-step (the world-model audit's Table 6: one 1,536 + 512-token response per
device; `--config.mesh.fsdp=8` spreads it over 8 devices, one device cannot hold its float32
state), all with bfloat16 compute, float32 master weights and AdamW, remat "full".

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


def _case(name, preset, rows, seq_len, overrides=None, micro_rows=0, rows_per_device=False,
          response_len=0, trainers=TRAINERS) -> dict:
  """One case: `rows` x `seq_len` tokens (`rows` per device with rows_per_device), accumulated in
  micro-batches of `micro_rows` (0: one micro-batch), GRPO responses of `response_len` tokens
  (0: the config's `response_len`)."""
  return dict(name=name, preset=preset, overrides=dict(overrides or {}), rows=rows,
              seq_len=seq_len, micro_rows=micro_rows, rows_per_device=rows_per_device,
              response_len=response_len, trainers=list(trainers))


def get_config(arg=None):
  arg = common.parse_arg(arg, debug=False, case="", trainer="")
  c = ml_collections.ConfigDict()
  c.experiment = "device_smoke"
  c.seed = 0
  c.mesh = dict(data=1, fsdp=1)     # --config.mesh.fsdp=8 on 8 devices
  c.optim = dict(lr=1e-5, warmup_frac=0.0, schedule="constant", weight_decay=0.01, b1=0.9,
                 b2=0.999, clip_norm=1.0)
  if arg.debug:
    cases = [_case("small", "qwen3-tiny", 4, 64, SMALL_TEST),
             _case("medium", "qwen3-tiny", 4, 128, dict(SMALL_TEST, num_layers=4)),
             _case("recipe", "qwen3-tiny", 4, 64, SMALL_TEST, micro_rows=2, trainers=["sft"])]
  else:   # 0.5B-class and 1.7B, the sizes the small GPU recipes use; then GenCoord at paper scale
    cases = [_case("small", "qwen3-0.6b", 8, 1024), _case("medium", "qwen3-1.7b", 8, 2048),
             _case("gencoord_paper", "qwen3.5-0.8b", 16, 2048, trainers=["sft"]),
             # configs/paper_scale.py PRESETS["gencoord"]: micro 4 x accumulation 4, bf16, 2,048
             _case("gencoord_recipe", "qwen3.5-0.8b", 16, 2048, micro_rows=4, trainers=["sft"]),
             # configs/wm/train.py at paper scale: one micro-batch of one row per device
             _case("grpo_7b_micro", "qwen2.5-7b", 1, 2048, rows_per_device=True,
                   response_len=512, trainers=["grpo"])]
  names = [k["name"] for k in cases]
  if arg.case and arg.case not in names:
    raise common.ConfigArgError(f"unknown case {arg.case!r}; valid: {', '.join(names)}")
  if arg.trainer and arg.trainer not in TRAINERS:
    raise common.ConfigArgError(f"unknown trainer {arg.trainer!r}; valid: {', '.join(TRAINERS)}")
  c.cases = [k for k in cases if arg.case in ("", k["name"])]
  c.trainers = [t for t in TRAINERS if arg.trainer in ("", t)]
  c.response_len = 32 if arg.debug else 256     # a case's own response_len wins
  return c
