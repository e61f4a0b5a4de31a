"""MiniGrid/BabyAI throughput: ours (batch 1024, vmap + scan, pooled auto-reset) vs Farama
minigrid (single env), navix GoToDoor-8x8 and xminigrid BlockedUnlockPickUp.

python launch.py --config=configs/bench/minigrid.py --workdir=runs/bench_minigrid
python launch.py --config=configs/bench/minigrid.py:debug=True --workdir=runs/bench_minigrid_debug
"""
import ml_collections

from configs import common


def get_config(arg=None):
  arg = common.parse_arg(arg, debug=False, batch=1024, steps=200, rounds=5, peers=True)
  c = ml_collections.ConfigDict()
  c.experiment = "bench/minigrid"
  c.seed = 0
  c.batch = 32 if arg.debug else arg.batch
  c.steps = 10 if arg.debug else arg.steps
  c.rounds = 2 if arg.debug else arg.rounds   # interleaved timed rounds (lib/bench/rounds.py)
  c.minigrid = dict(debug=arg.debug, peers=arg.peers, farama_steps=300 if arg.debug else 3000,
                    tasks=["BabyAI-GoToRedBall-v0", "BabyAI-GoToDoor-v0"] if arg.debug else [
                        "BabyAI-GoToRedBall-v0", "BabyAI-GoToObj-v0", "BabyAI-GoToLocal-v0",
                        "BabyAI-GoTo-v0", "BabyAI-GoToDoor-v0",
                        "BabyAI-BlockedUnlockPickup-v0"])
  return c
