"""GenCoord commitment horizon on the 80 held-out-template clusters (model-free reference).

Multi-step commitments decide each role's whole path in one call (2 learned stages); the
single-step controller commits the sender's first step, decides the rest after it ran, then
calls the receiver (3 stages). With the programmatic reference both close every episode, so
the table isolates the decision cost (calls per episode).

python launch.py --config=configs/gencoord/horizon.py --workdir=runs/gencoord_horizon
"""
from configs import common
from configs.gencoord import eval as gencoord_eval


def get_config(arg=None):
  arg = common.parse_arg(arg, debug=False)
  return gencoord_eval.build("horizon", arg.debug)
