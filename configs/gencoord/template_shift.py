"""GenCoord model-free references under template shift (80 held-out-template clusters).

The rule forwards the private binding and the public composer expands it for any template in
the shared prior (100%); lookup-style rules fitted on the training templates (complete-case
table, TF-IDF neighbour restricted to the same template) have nothing to retrieve (0%).

python launch.py --config=configs/gencoord/template_shift.py --workdir=runs/gencoord_shift
"""
from configs import common
from configs.gencoord import eval as gencoord_eval


def get_config(arg=None):
  arg = common.parse_arg(arg, debug=False)
  return gencoord_eval.build("template_shift", arg.debug)
