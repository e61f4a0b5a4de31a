"""GRPO of a tiny Qwen3 on a toy verifiable task (lib/rl/grpo.py end to end).

python launch.py --config=configs/grpo_toy.py:debug=True --workdir=runs/grpo_toy
python launch.py --config=configs/grpo_toy.py:reward=coin --workdir=runs/grpo_coin
python launch.py --config=configs/grpo_toy.py --workdir=runs/grpo_perm --config.grpo.permute_scores=True
python launch.py --config=configs/grpo_toy.py --workdir=runs/grpo_plan --plan   # memory, no run
"""
import ml_collections

from configs import common
from lib.run.config_blocks import model_block, plan_block


def get_config(arg=None):
  arg = common.parse_arg(arg, debug=False, reward="first_token")
  c = ml_collections.ConfigDict()
  c.experiment = "train_grpo"
  c.seed = 0
  c.start_fresh = False  # True: move existing checkpoints aside, train from step 0
  c.model = model_block(preset="qwen3-tiny", overrides={"vocab_size": 32})
  c.mesh = dict(data=1, fsdp=1)
  # Table 6 of the world-model audit: AdamW (0.9, 0.999), wd 0.01, constant lr, no warm-up, clip
  # 1.0, group 8, temperature 1, eps 0.2, dual clip 3, KL 0.01, entropy 0.001, one update epoch
  # with minibatch = batch. The learning rate is raised from 1e-6 for a from-scratch toy model.
  c.optim = dict(lr=1e-2, warmup_frac=0.0, schedule="constant", weight_decay=0.01, b1=0.9,
                 b2=0.999, clip_norm=1.0)
  c.grpo = dict(group_size=8, temperature=1.0, clip_eps=0.2, dual_clip_c=3.0, kl_coef=0.01,
                entropy_coef=0.001, agg="token-mean", update_epochs=1, minibatch_prompts=8,
                micro_batch=0, permute_scores=False, loss_chunk_tokens=1024)  # 0: full logits
  c.reward = dict(kind=arg.reward, target_id=5, p=0.5)
  c.train = dict(iterations=15 if arg.debug else 60, prompts=8, prompt_len=4, max_new_tokens=4,
                 log_every=5, ckpt_every=5 if arg.debug else 20)
  # `--plan`: one update of minibatch_prompts x group_size rows with the KL reference resident.
  g, t = c.grpo, c.train
  c.plan = plan_block(trainer="grpo", rows=g.get_ref("minibatch_prompts") * g.get_ref("group_size"),
                      micro_rows=g.get_ref("micro_batch"), response_len=t.get_ref("max_new_tokens"),
                      seq_len=t.get_ref("prompt_len") + t.get_ref("max_new_tokens"), reference=True)
  return c


def sweep(add, arg=None):
  for kind in ("first_token", "coin"):
    add(**{"reward.kind": kind})
