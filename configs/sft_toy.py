"""SFT of a tiny Qwen3 on a synthetic copy task (lib/sft/step.py end to end).

python launch.py --config=configs/sft_toy.py:debug=True --workdir=runs/sft_toy
python launch.py --config=configs/sft_toy.py --workdir=runs/sft_toy --config.mesh.fsdp=2
python launch.py --config=configs/sft_toy.py --workdir=runs/sft_plan --plan   # memory, no run
"""
import ml_collections

from configs import common
from lib.run.config_blocks import model_block, plan_block


def get_config(arg=None):
  arg = common.parse_arg(arg, debug=False, preset="qwen3-tiny")
  c = ml_collections.ConfigDict()
  c.experiment = "train_sft"
  c.seed = 0
  c.model = model_block(preset=arg.preset)
  c.start_fresh = False  # True: move existing checkpoints aside, train from step 0
  c.mesh = dict(data=1, fsdp=1)
  # AdamW, weight decay 0.01, cosine with warm-up, clip 1.0 (the SFT recipe).
  c.optim = dict(lr=1e-2, warmup_frac=0.05, schedule="cosine", weight_decay=0.01, b1=0.9,
                 b2=0.999, clip_norm=1.0)
  c.train = dict(steps=40 if arg.debug else 400, batch=16, accum_steps=2, seq_len=16,
                 eval_rows=64, log_every=10, eval_every=20, ckpt_every=20 if arg.debug else 100,
                 loss_chunk_tokens=1024)  # vocabulary-chunked loss; 0: full logits
  # `--plan`: the memory of this SFT step (references, so --config.train.* overrides follow).
  t = c.train
  c.plan = plan_block(trainer="sft", rows=t.get_ref("batch"), seq_len=t.get_ref("seq_len"),
                      micro_rows=t.get_ref("batch") // t.get_ref("accum_steps"))
  return c


def sweep(add, arg=None):
  for lr in (3e-3, 1e-2):
    add(**{"optim.lr": lr})
