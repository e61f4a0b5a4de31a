"""Throughput of the rule-backend GenCoord closed loop vs a naive baseline (same run).

python launch.py --config=configs/gencoord/bench.py --workdir=runs/gencoord_bench
"""
import ml_collections

from configs import common


def get_config(arg=None):
  arg = common.parse_arg(arg, debug=False)
  c = ml_collections.ConfigDict()
  c.experiment = "gencoord/bench"
  c.debug = arg.debug
  c.seed = 0
  c.suite = "intervention"
  c.backend = "rule_minimal_request"
  c.condition = "true"
  c.rounds = 2 if arg.debug else 5   # interleaved optimized/baseline rounds (lib/bench/rounds.py)
  c.passes = 1 if arg.debug else 3   # passes over the suite per side per round
  c.goal = 2000
  return c
