"""Smoke experiment: exercises launch, logging, resumable results and the summary table.

python launch.py --config=configs/smoke.py --workdir=runs/smoke
python launch.py --config=configs/smoke.py:debug=True --workdir=runs/smoke_debug
"""
import ml_collections

from configs import common


def get_config(arg=None):
  arg = common.parse_arg(arg, debug=False, tasks=40, attempts=16)
  c = ml_collections.ConfigDict()
  c.experiment = "smoke"
  c.seed = 0
  c.tasks = 8 if arg.debug else arg.tasks
  c.attempts = 4 if arg.debug else arg.attempts
  c.ks = [1, 2, 4] if arg.debug else [1, 2, 4, 8, 16]
  c.n_resamples = 1000 if arg.debug else 10_000
  return c


def sweep(add, arg=None):
  del arg
  for attempts in (4, 8):
    add(**{"attempts": attempts})
