"""World-model post-training under one audit condition (Table 6 defaults).

Conditions: BASE, GRPO-GT, GRPO-MIS, GRPO-COIN, GT-PERM, MIS-PERM, OPSD-GT, OPSD-MIS.
CPU check (tiny random model, lexical stand-in embedder, a few steps):
python launch.py --config=configs/wm/train.py:debug=True,condition=GRPO-MIS \
    --workdir=runs/wm_train_debug --config.data.train=runs/wm_data_debug/train.jsonl
Full scale (Qwen2.5-7B-Instruct from a local directory on one GPU; Qwen3-Embedding-8B as a local
directory, or any OpenAI-compatible /v1/embeddings server via embedder=openai):
python launch.py --config=configs/wm/train.py:condition=GRPO-GT,env=alfworld,\
model_dir=$MODELS/Qwen2.5-7B-Instruct,embedder_dir=$MODELS/Qwen3-Embedding-8B \
    --workdir=runs/wm_alfworld_grpo_gt --config.data.train=runs/wm_data/train.jsonl
python launch.py --config=configs/wm/train.py --sweep --workdir=runs/wm_alfworld   # every condition
Memory plan at paper scale (`scale=paper`: Qwen2.5-7B policy and Qwen3-Embedding-8B shapes from the
built-in presets, no download; `model_dir` still names the weights of a real run), no training:
XLA_FLAGS=--xla_force_host_platform_device_count=8 python launch.py \
    --config=configs/wm/train.py:scale=paper --workdir=runs/wm_plan --plan \
    --config.mesh.fsdp=8 --config.plan.device_memory_gib=80
"""
import ml_collections

from agents.wm.condition_table import CONDITIONS
from configs import common
from lib.run.config_blocks import model_block, plan_block

# Table 6: max input length 1,536 (ALFWorld) / 2,560 (ScienceWorld) tokens, output 512.
MAX_INPUT = {"alfworld": 1536, "scienceworld": 2560, "textworld": 1536, "": 2560}
# Table 6: micro-batch size per GPU, in responses: GRPO ALFWorld 1, ScienceWorld 1 (VisualWebArena,
# not run here, 4), OPSD ALFWorld 1.
MICRO_PER_DEVICE = 1


def get_config(arg=None):
  arg = common.parse_arg(arg, debug=False, condition="GRPO-GT", env="", model_dir="",
                         embedder="qwen", embedder_dir="", base_url="http://127.0.0.1:8001/v1",
                         embed_model="Qwen3-Embedding-8B", scale="")
  if arg.condition not in CONDITIONS:
    raise ValueError(f"unknown condition {arg.condition!r}; valid: {', '.join(CONDITIONS)}")
  if arg.scale not in ("", "paper"):
    raise ValueError(f"unknown scale {arg.scale!r}; valid: '' (default), 'paper'")
  paper = arg.scale == "paper"
  c = ml_collections.ConfigDict()
  c.experiment = "wm/train"
  c.seed = 0
  c.start_fresh = False  # True: move existing checkpoints aside, train from step 0
  c.condition = arg.condition
  c.data = dict(train="", env=arg.env, mis_seed=0, limit=0)   # train.jsonl from wm_data
  # checkpoint "" = a tiny random model (CPU scale) with a BPE trained on the samples.
  c.model = model_block(checkpoint="" if arg.debug else arg.model_dir,
                        preset="qwen2.5-7b" if paper else "qwen3-tiny",
                        vocab_size=512, dtype="float32" if arg.debug else "bfloat16",
                        remat="full" if paper else "none")
  # Table 6: AdamW (0.9, 0.999), lr 1e-6, weight decay 0.01, constant schedule, no warm-up,
  # gradient-norm clip 1.0.
  c.optim = dict(lr=1e-6, warmup_frac=0.0, schedule="constant", weight_decay=0.01, b1=0.9,
                 b2=0.999, clip_norm=1.0)
  # FSDP shards of the policy, its AdamW state and the reference / teacher; rows over data x fsdp.
  c.mesh = dict(data=1, fsdp=1)
  # Table 6's micro-batch per device: rows per accumulation micro-batch = that x the devices, so
  # `--config.mesh.fsdp=16` gives micro-batches of 16 rows (a debug run takes the whole minibatch).
  micro = (0 if arg.debug else
           MICRO_PER_DEVICE * c.mesh.get_ref("data") * c.mesh.get_ref("fsdp"))
  # Paper scale: rollouts sample from a bf16 copy of the weights (a bf16 KV cache, not a float32
  # one) and prefill 16 rows at a time (bounding the [rows, heads, P, P] scores); CPU runs sample
  # from the float32 weights in one prefill.
  rollout = (dict(rollout_dtype="bfloat16", prefill_rows=16) if paper else
             dict(rollout_dtype="", prefill_rows=0))
  # Paper scale: the frozen KL reference / OPSD teacher is held in bf16, the dtype the model
  # computes in (the same log-probs as float32 copies, half their memory: 0.89 GiB per v5e chip).
  rollout["frozen_dtype"] = "bfloat16" if paper else ""
  # GRPO: batch = mini-batch = 32 prompts, rollout n 8, temperature 1.0, top-p 1.0, clip 0.2,
  # dual clip 3.0, KL 0.01 (k3), entropy 0.001, one update epoch.
  c.grpo = dict(group_size=8, temperature=1.0, clip_eps=0.2, dual_clip_c=3.0, kl_coef=0.01,
                entropy_coef=0.001, agg="token-mean", update_epochs=1, minibatch_prompts=32,
                micro_batch=micro, permute_scores=CONDITIONS[arg.condition].permute,
                **rollout)
  # OPSD: rollout n 1, JSD alpha 0.5, importance-weight clip 2.0, no KL / entropy terms.
  c.opsd = dict(alpha=0.5, temperature=1.0, is_clip=2.0, update_epochs=1, minibatch=32,
                micro_batch=micro, **rollout)
  c.reward = dict(threshold=0.8, coin_p=0.5)   # RWML's binary reward: cos > 0.8
  if arg.debug:
    c.embedder = dict(kind="lexical", dim=2048, path="", max_length=512, base_url="", model="",
                      api_key_env="")
  else:
    c.embedder = dict(kind=arg.embedder, dim=2048, path=arg.embedder_dir, max_length=512,
                      base_url=arg.base_url, model=arg.embed_model, api_key_env="")
  c.train = dict(batch=4 if arg.debug else 32,
                 epochs=1,
                 steps=2 if arg.debug else 0,            # 0 = one pass over the samples
                 max_input_tokens=1024 if arg.debug else MAX_INPUT[arg.env],
                 max_output_tokens=24 if arg.debug else 512,
                 span="next_state",                      # OPSD loss span ("response": all)
                 pad_prompts_to=0,       # >0: left-pad prompts to this length (one jit shape)
                 log_every=1 if arg.debug else 10, ckpt_every=1 if arg.debug else 50,
                 export=True)
  if arg.debug:
    c.grpo.group_size, c.grpo.minibatch_prompts, c.opsd.minibatch = 4, 4, 4
    c.optim.lr = 1e-3            # a random tiny model moves visibly only with a larger step
  # `--plan`: one GRPO / OPSD update with the KL reference and the bf16 embedder resident.
  cond, t = CONDITIONS[arg.condition], c.train
  block = c.opsd if cond.trainer == "opsd" else c.grpo
  rows = (block.get_ref("minibatch") if cond.trainer == "opsd"
          else block.get_ref("minibatch_prompts") * block.get_ref("group_size"))
  in_process = paper and cond.reward == "embedding" and arg.embedder == "qwen"
  embedder = "qwen3-embedding-8b" if in_process else ""
  c.plan = plan_block(trainer=cond.trainer or "grpo", rows=rows,   # BASE: planned as GRPO
                      micro_rows=block.get_ref("micro_batch"),
                      seq_len=t.get_ref("max_input_tokens") + t.get_ref("max_output_tokens"),
                      response_len=t.get_ref("max_output_tokens"),
                      reference=cond.trainer == "grpo", embedder=embedder,
                      rollout_dtype=block.get_ref("rollout_dtype"),
                      prefill_rows=block.get_ref("prefill_rows"),
                      reference_dtype=block.get_ref("frozen_dtype"))
  return c


def sweep(add, arg=None):
  del arg
  for name, cond in CONDITIONS.items():
    add(**{"condition": name, "grpo.permute_scores": cond.permute})
