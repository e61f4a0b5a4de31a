"""Evaluation of the audit's conditions: pass@k, coverage tests, behaviour, prediction accuracy.

Every condition (a backend) x (env, regime) x level x sample through the host loop (results.jsonl,
resumable), then pass@k with task-bootstrap bands and PNGs, McNemar tests, behaviour, domain and
chain-of-thought tables and prediction accuracy on held-out transitions. The stage itself is
`agents.wm.evaluate.evaluate`, which experiments/wm/demo.py and study.py call too.
"""
from agents.wm import evaluate


def run(config, workdir):
  """Evaluates the conditions of `config` (configs/wm/eval.py) into `workdir`."""
  return evaluate.evaluate(config, workdir)
