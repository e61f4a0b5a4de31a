"""ConPAct-R/S: train on curated consistent interactions logged by conpact_eval.

# 1. log ConPAct-I and ReAct rollouts on SOURCE instances (scripted here; any backend works):
python launch.py --config=configs/conpact/scripted.py:instances=20 --workdir=runs/cp_source \
    --config.split=source --config.envs='("sokoban",)'
# 2. curate + train (full data; ablations: sup=False or replay=False), then evaluate the export:
python launch.py --config=configs/conpact/train.py:source=runs/cp_source --workdir=runs/cp_r
python launch.py --config=configs/conpact/flax.py:checkpoint=runs/cp_r/export,budget=0 --workdir=runs/cp_r_eval
"""
import ml_collections

from configs import common
from lib.model_setup import model_block


def get_config(arg=None):
  arg = common.parse_arg(arg, debug=False, source="", env="sokoban", checkpoint="", sup=True,
                         replay=True, filtering=True, max_steps=0)
  c = ml_collections.ConfigDict()
  c.experiment = "conpact/train"
  c.seed = 42  # paper Table 7 training seed
  c.source = arg.source  # a conpact_eval workdir
  c.env = arg.env
  c.model = model_block(checkpoint=arg.checkpoint)  # "" = embedded tiny random Flax model
  c.start_fresh = False  # True: move existing checkpoints aside, train from step 0
  c.conditions = ["conpact_i"]  # whose logs are curated
  c.react_condition = "react"  # the token-budget reference
  c.reference_epochs = 3
  c.curate = dict(consistency_filtering=arg.filtering, reconciliation_supervision=arg.sup,
                  reconciliation_replay=arg.replay, success_only=True)
  c.train = dict(batch=2 if arg.debug else 8, max_len=512 if arg.debug else 4096, lr=1e-5,
                 max_steps=2 if arg.debug else arg.max_steps, log_every=1, ckpt_every=100)
  return c
