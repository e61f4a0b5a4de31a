"""On-policy self-distillation of a tiny Qwen3 toward its own hint-conditioned copy
(lib/rl/opsd.py).

python launch.py --config=configs/opsd_toy.py:debug=True --workdir=runs/opsd_toy
python launch.py --config=configs/opsd_toy.py:hint=mismatched --workdir=runs/opsd_mis
python launch.py --config=configs/opsd_toy.py --workdir=runs/opsd_plan --plan   # memory, no run
"""
import ml_collections

from configs import common
from lib.run.config_blocks import model_block, plan_block


def get_config(arg=None):
  arg = common.parse_arg(arg, debug=False, hint="fixed")
  c = ml_collections.ConfigDict()
  c.experiment = "train_opsd"
  c.seed = 0
  c.start_fresh = False  # True: move existing checkpoints aside, train from step 0
  c.model = model_block(preset="qwen3-tiny", overrides={"vocab_size": 32})
  c.mesh = dict(data=1, fsdp=1)
  # Table 6 (OPSD column): AdamW (0.9, 0.999), wd 0.01, constant lr, clip 1.0, rollout n = 1,
  # temperature 1, JSD alpha 0.5, importance-weight clip 2.0, no KL or entropy terms. The learning
  # rate is raised from 1e-6 for the toy model.
  c.optim = dict(lr=3e-3, warmup_frac=0.0, schedule="constant", weight_decay=0.01, b1=0.9,
                 b2=0.999, clip_norm=1.0)
  c.opsd = dict(alpha=0.5, temperature=1.0, is_clip=2.0, update_epochs=2, minibatch=16,
                micro_batch=0, loss_chunk_tokens=1024)  # vocabulary-chunked loss; 0: full logits
  c.task = dict(hint=arg.hint)
  c.train = dict(iterations=10 if arg.debug else 60, rows=16, prompt_len=4, max_new_tokens=4,
                 eval_rows=32, init_scale=4.0, log_every=5, eval_every=5,
                 ckpt_every=5 if arg.debug else 20)
  # `--plan`: one update of `minibatch` rows; the frozen teacher is an argument of the step.
  o, t = c.opsd, c.train
  c.plan = plan_block(trainer="opsd", rows=o.get_ref("minibatch"),
                      micro_rows=o.get_ref("micro_batch"),
                      seq_len=t.get_ref("prompt_len") + t.get_ref("max_new_tokens"),
                      response_len=t.get_ref("max_new_tokens"))
  return c


def sweep(add, arg=None):
  for hint in ("fixed", "mismatched"):
    add(**{"task.hint": hint})
