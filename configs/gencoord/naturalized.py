"""GenCoord naturalized private facts (Section S8.1), model-free formation references.

The sender sees a described fact instead of the binding id: surface c1 (unseen sentence
frames), c2 (paraphrased key phrases) or c3 (paraphrase plus a distractor). Rules are fitted on
the training notes of the 480 training clusters; evaluation uses the 160 intervention clusters.

python launch.py --config=configs/gencoord/naturalized.py:surface=c1 --workdir=runs/gc_nat_c1
python launch.py --config=configs/gencoord/naturalized.py:surface=c2 --workdir=runs/gc_nat_c2
python launch.py --config=configs/gencoord/naturalized.py:surface=c3 --workdir=runs/gc_nat_c3
"""
from configs import common
from configs.gencoord import eval as gencoord_eval


def get_config(arg=None):
  arg = common.parse_arg(arg, debug=False, surface="c1")
  return gencoord_eval.build(f"naturalized_{arg.surface}", arg.debug)
