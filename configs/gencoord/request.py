"""GenCoord request intervention on 160 clusters (Table S12), model-free and exact.

True request (programmatic direct-DSL reference) 100%, request removed 50%, same-template
alternative 0%, Rule-Minimal-Request 100%.

python launch.py --config=configs/gencoord/request.py --workdir=runs/gencoord_request
python launch.py --config=configs/gencoord/request.py:debug=True --workdir=runs/gencoord_request_dbg
"""
from configs import common
from configs.gencoord import eval as gencoord_eval


def get_config(arg=None):
  arg = common.parse_arg(arg, debug=False)
  return gencoord_eval.build("request", arg.debug)
