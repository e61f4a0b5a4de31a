"""World-model post-training under one of the audit's conditions (agents/wm/conditions.py).

GRPO-* (lib/rl/grpo.py), OPSD-* (lib/rl/opsd.py) or BASE (no updates, exported as is) on the
next-observation samples of experiments/wm/data.py; checkpoints in <workdir>/ckpt (resumable),
the final model as an HF directory <workdir>/hf, summary.json/md. The stage itself is
`agents.wm.train.train_condition`, which experiments/wm/demo.py and study.py call too.
"""
from agents.wm import train


def run(config, workdir):
  """Trains one condition (configs/wm/train.py); returns `train_condition`'s summary."""
  return train.train_condition(config, workdir)
