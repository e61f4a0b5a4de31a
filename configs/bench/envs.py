"""Environment throughput benchmark (Sokoban vs jumanji; MiniGrid section when present).

python launch.py --config=configs/bench/envs.py --workdir=runs/bench_envs
python launch.py --config=configs/bench/envs.py:debug=True --workdir=runs/bench_envs_debug
"""
import ml_collections

from configs import common


def get_config(arg=None):
  arg = common.parse_arg(arg, debug=False, batch=1024, steps=200, rounds=5)
  c = ml_collections.ConfigDict()
  c.experiment = "bench/envs"
  c.seed = 0
  c.batch = 32 if arg.debug else arg.batch
  c.steps = 10 if arg.debug else arg.steps
  c.rounds = 2 if arg.debug else arg.rounds   # interleaved timed rounds (lib/bench/rounds.py)
  c.sections = ("sokoban", "minigrid")       # a tuple, so --config.sections="('sokoban',)" works
  c.sokoban = dict(num_levels=16 if arg.debug else 256, max_steps=120)
  # the MiniGrid section reads its own options from here (see experiments/bench/minigrid.py)
  c.minigrid = dict(debug=arg.debug)
  return c
