"""GenCoord naturalized private facts (Section S8.1), model-free formation references.

The sender sees a described fact instead of the binding id: surface c1 (unseen sentence
frames), c2 (paraphrased key phrases) or c3 (paraphrase plus a distractor). Rules are fitted on
the training notes of the 480 training clusters; evaluation uses the 160 intervention clusters.

python launch.py --config=configs/gencoord/naturalized.py:surface=c1 --workdir=runs/gc_nat_c1
python launch.py --config=configs/gencoord/naturalized.py:surface=c2 --workdir=runs/gc_nat_c2
python launch.py --config=configs/gencoord/naturalized.py:surface=c3 --workdir=runs/gc_nat_c3
"""
import ml_collections

from configs import common


def get_config(arg=None):
  arg = common.parse_arg(arg, debug=False, surface="c1")
  c = ml_collections.ConfigDict()
  c.experiment = "gencoord/eval"
  c.title = f"GenCoord naturalized private facts ({arg.surface})"
  c.seed = 0
  c.protocol = "forward"
  c.suite = f"naturalized_{arg.surface}"
  c.max_clusters = 16 if arg.debug else 0
  c.train_suite = "naturalized_train"
  c.batch = 256
  c.conditions = [
      dict(name="oracle_factors", backend="oracle_factors", condition="true"),
      dict(name="frozen_parser", backend="frozen_parser", condition="true"),
      dict(name="tfidf_nn", backend="tfidf_nn", condition="true"),
      dict(name="surface_table", backend="surface_table", condition="true"),
  ]
  c.reference = "oracle_factors"
  c.paper = {"c1": dict(oracle_factors=100.0, frozen_parser=100.0, tfidf_nn=100.0,
                        surface_table=0.0),
             "c2": dict(oracle_factors=100.0, frozen_parser=0.0, tfidf_nn=59.4,
                        surface_table=0.0),
             "c3": dict(oracle_factors=100.0, frozen_parser=0.0, tfidf_nn=62.5,
                        surface_table=0.0)}[arg.surface]
  c.n_resamples = 1000 if arg.debug else 10_000
  c.bootstrap_seed = 8901
  c.paired_seed = 8911
  return c

