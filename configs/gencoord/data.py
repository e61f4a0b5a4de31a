"""GenCoord supervision rows: 480 training clusters x 2 roles -> 960 sender + 960 receiver rows
(single-step control: 960 first-step + 960 intermediate + 960 receiver rows), on the Short DSL,
JSON, free-form and factor surfaces,
plus Goal x Capability requester rows (160 training clusters -> 320 + 320 rows).

python launch.py --config=configs/gencoord/data.py --workdir=runs/gencoord_data
"""
import ml_collections

from configs import common


def get_config(arg=None):
  arg = common.parse_arg(arg, debug=False)
  c = ml_collections.ConfigDict()
  c.experiment = "gencoord/data"
  c.seed = 0
  c.forward_pools = ["heldout"] if arg.debug else ["train", "heldout"]
  c.surfaces = ["dsl"] if arg.debug else ["dsl", "json", "freeform", "factor"]
  c.horizons = ["multi", "single"]       # single-step control: first step + rest rows
  c.capability_pools = ["capability"] if arg.debug else ["capability_train", "capability"]
  return c
