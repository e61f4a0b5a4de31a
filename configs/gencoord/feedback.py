"""GenCoord Goal x Capability feedback suite on 40 clusters / 20 matched pairs (Table S18).

Requester-local 50%, correct bounded feedback 100%, counterfactual feedback 0% (every
commitment field follows the injected response), centralized full information 100%.

python launch.py --config=configs/gencoord/feedback.py --workdir=runs/gencoord_feedback
python launch.py --config=configs/gencoord/feedback.py:debug=True --workdir=runs/gc_fb_dbg
"""
from configs import common
from configs.gencoord import eval as gencoord_eval


def get_config(arg=None):
  arg = common.parse_arg(arg, debug=False)
  return gencoord_eval.build("feedback", arg.debug)
