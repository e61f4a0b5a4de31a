"""Field probe of a ConPAct study's base roles (agents/conpact/learned/field_probe.py): each role
decodes the state block of demonstration prompts greedily, per env schema and field.

Two row sets per role: `train` = initial-assertion rows the role was trained on (the study's
data/<role>.jsonl, misperceiving demonstrator: the target is the demonstrated belief), and
`held_out` = rows of the next source instances after the study's, drawn without misperception
(belief = truth). Source split only: no evaluation instance is read.

python launch.py --config=configs/conpact/probe.py:study=runs/cp_arms/R0 --workdir=runs/cp_probe_r0
python launch.py --config=configs/conpact/probe.py:study=runs/cp_arms/R0,debug=True --workdir=runs/cp_probe_dbg
"""
import ml_collections

from configs import common
from lib.run.config_blocks import backend_config


def get_config(arg=None):
  arg = common.parse_arg(arg, debug=False, study="", per_env=64, held_out_sokoban=20,
                         held_out_babyai=10)
  c = ml_collections.ConfigDict()
  c.experiment = "conpact/probe"
  c.seed = 0
  c.study_dir = arg.study                   # a conpact/study run directory (data/, base/)
  c.roles = ["planner", "actor"]
  c.per_env = 4 if arg.debug else arg.per_env   # rows per env schema and row set
  # held-out source instances: the ones after the study's own (its data.sokoban / data.babyai)
  c.held_out = dict(sokoban=2 if arg.debug else arg.held_out_sokoban,
                    babyai=1 if arg.debug else arg.held_out_babyai)
  c.max_tokens = 96
  c.backend = backend_config("flax", model=dict(checkpoint=""), max_batch=64, min_batch=16)
  return c
