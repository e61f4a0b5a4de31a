"""GenCoord composition reference on 60 unseen binding cross-products (Table S15).

The complete-case table is built from the 60 seen cross-products and covers none of the unseen
ones (0/60); the explicit-factor composer builds each branch field by field (60/60).

python launch.py --config=configs/gencoord/composition.py --workdir=runs/gencoord_composition
"""
import ml_collections

from configs import common


def get_config(arg=None):
  arg = common.parse_arg(arg, debug=False)
  c = ml_collections.ConfigDict()
  c.experiment = "gencoord/eval"
  c.title = "GenCoord composition reference (60 unseen cross-products)"
  c.seed = 0
  c.protocol = "forward"
  c.suite = "cross_product"
  c.max_clusters = 12 if arg.debug else 0
  c.train_suite = "cross_product_seen"
  c.batch = 256
  c.conditions = [
      dict(name="case_table", backend="case_table", condition="true"),
      dict(name="explicit_factor_composer", backend="explicit_factor", condition="true"),
  ]
  c.reference = "explicit_factor_composer"
  c.paper = dict(case_table=0.0, explicit_factor_composer=100.0)
  c.n_resamples = 1000 if arg.debug else 10_000
  c.bootstrap_seed = 8901
  c.paired_seed = 8911
  return c
