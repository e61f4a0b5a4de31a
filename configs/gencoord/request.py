"""GenCoord request intervention on 160 clusters (Table S12), model-free and exact.

True request (programmatic direct-DSL reference) 100%, request removed 50%, same-template
alternative 0%, Rule-Minimal-Request 100%.

python launch.py --config=configs/gencoord/request.py --workdir=runs/gencoord_request
python launch.py --config=configs/gencoord/request.py:debug=True --workdir=runs/gencoord_request_dbg
"""
import ml_collections

from configs import common


def get_config(arg=None):
  arg = common.parse_arg(arg, debug=False)
  c = ml_collections.ConfigDict()
  c.experiment = "gencoord/eval"
  c.title = "GenCoord request intervention (160 clusters)"
  c.seed = 0
  c.protocol = "forward"
  c.suite = "intervention"
  c.max_clusters = 16 if arg.debug else 0
  c.train_suite = "train"
  c.batch = 256
  c.conditions = [
      dict(name="true_request", backend="program", condition="true"),
      dict(name="request_removed", backend="program", condition="removed"),
      dict(name="same_template_alternative", backend="program", condition="alternative"),
      dict(name="rule_minimal_request", backend="rule_minimal_request", condition="true"),
  ]
  c.reference = "true_request"
  # The paper's reported success (%) for side-by-side reading; never used in computation.
  c.paper = dict(true_request=100.0, request_removed=50.0, same_template_alternative=0.0,
                 rule_minimal_request=100.0)
  c.n_resamples = 1000 if arg.debug else 10_000
  c.bootstrap_seed = 8901
  c.paired_seed = 8911
  return c
