"""GenCoord Goal x Capability feedback suite on 40 clusters / 20 matched pairs (Table S18).

Requester-local 50%, correct bounded feedback 100%, counterfactual feedback 0% (every
commitment field follows the injected response), centralized full information 100%.

python launch.py --config=configs/gencoord/feedback.py --workdir=runs/gencoord_feedback
python launch.py --config=configs/gencoord/feedback.py:debug=True --workdir=runs/gc_fb_dbg
"""
import ml_collections

from configs import common


def get_config(arg=None):
  arg = common.parse_arg(arg, debug=False)
  c = ml_collections.ConfigDict()
  c.experiment = "gencoord/eval"
  c.title = "GenCoord Goal x Capability feedback (40 clusters, 20 matched pairs)"
  c.seed = 0
  c.protocol = "feedback"
  c.suite = "capability"
  c.max_clusters = 8 if arg.debug else 0
  c.train_suite = "train"
  c.batch = 256
  c.conditions = [
      dict(name="requester_local", backend="program", condition="local"),
      dict(name="correct_feedback", backend="program", condition="correct"),
      dict(name="counterfactual_feedback", backend="program", condition="counterfactual"),
      dict(name="centralized", backend="program", condition="centralized"),
  ]
  c.reference = "correct_feedback"
  c.paper = dict(requester_local=50.0, correct_feedback=100.0, counterfactual_feedback=0.0,
                 centralized=100.0)
  c.n_resamples = 1000 if arg.debug else 10_000
  c.bootstrap_seed = 8901
  c.paired_seed = 8911
  c.block_seed = 8921
  return c
