"""GenCoord composition reference on 60 unseen binding cross-products (Table S15).

The complete-case table is built from the 60 seen cross-products and covers none of the unseen
ones (0/60); the explicit-factor composer builds each branch field by field (60/60).

python launch.py --config=configs/gencoord/composition.py --workdir=runs/gencoord_composition
"""
from configs import common
from configs.gencoord import eval as gencoord_eval


def get_config(arg=None):
  arg = common.parse_arg(arg, debug=False)
  return gencoord_eval.build("composition", arg.debug)
