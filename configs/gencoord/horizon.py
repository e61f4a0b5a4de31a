"""GenCoord commitment horizon on the 80 held-out-template clusters (model-free reference).

Multi-step commitments decide each role's whole path in one call (2 learned stages); the
single-step controller commits the sender's first step, decides the rest after it ran, then
calls the receiver (3 stages). With the programmatic reference both close every episode, so
the table isolates the decision cost (calls per episode).

python launch.py --config=configs/gencoord/horizon.py --workdir=runs/gencoord_horizon
"""
import ml_collections

from configs import common


def get_config(arg=None):
  arg = common.parse_arg(arg, debug=False)
  c = ml_collections.ConfigDict()
  c.experiment = "gencoord/eval"
  c.title = "GenCoord commitment horizon (80 held-out-template clusters)"
  c.seed = 0
  c.protocol = "forward"
  c.suite = "heldout_template"
  c.max_clusters = 16 if arg.debug else 0
  c.train_suite = "train"
  c.batch = 256
  c.conditions = [
      dict(name="multi_step", backend="program", condition="true", horizon="multi"),
      dict(name="single_step", backend="program", condition="true", horizon="single"),
  ]
  c.reference = "multi_step"
  c.paper = dict()
  c.n_resamples = 1000 if arg.debug else 10_000
  c.bootstrap_seed = 8901
  c.paired_seed = 8911
  return c
