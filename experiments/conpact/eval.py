"""ConPAct evaluation: methods/conditions x envs x instances x rollouts through the host loop.

Every condition (agents/conpact/methods.py) on every instance `rollouts` times (results.jsonl,
resumable), then the performance, mismatch, attribution, cost, ablation and paired tables
(summary.json/md) and demo.png. The stage itself is `agents.conpact.evaluate.evaluate`, which
experiments/conpact/study.py calls too.
"""
from agents.conpact import evaluate


def run(config, workdir):
  """Evaluates the conditions of `config` (configs/conpact/scripted.py, flax.py, openai.py);
  returns `evaluate`'s summary."""
  return evaluate.evaluate(config, workdir)
