"""ConPAct with trained models (configs/conpact/study.py): data -> tokenizer -> base roles ->
online -> ConPAct-R/S training -> report, every stage resumable.

The stages are `agents.conpact.learned.study.run`, which experiments/conpact/arms.py calls once
per arm and pipeline seed too.
"""
from agents.conpact.learned import study


def run(config, workdir):
  """Runs (or resumes) the study of `config` in `workdir`; returns the report's summary."""
  return study.run(config, workdir)
