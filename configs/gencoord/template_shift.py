"""GenCoord model-free references under template shift (80 held-out-template clusters).

The rule forwards the private binding and the public composer expands it for any template in
the shared prior (100%); lookup-style rules fitted on the training templates (complete-case
table, TF-IDF neighbour restricted to the same template) have nothing to retrieve (0%).

python launch.py --config=configs/gencoord/template_shift.py --workdir=runs/gencoord_shift
"""
import ml_collections

from configs import common


def get_config(arg=None):
  arg = common.parse_arg(arg, debug=False)
  c = ml_collections.ConfigDict()
  c.experiment = "gencoord/eval"
  c.title = "GenCoord template shift (80 held-out-template clusters)"
  c.seed = 0
  c.protocol = "forward"
  c.suite = "heldout_template"
  c.max_clusters = 16 if arg.debug else 0
  c.train_suite = "train"
  c.batch = 256
  c.conditions = [
      dict(name="rule_minimal_request", backend="rule_minimal_request", condition="true"),
      dict(name="program_reference", backend="program", condition="true"),
      dict(name="case_table", backend="case_table", condition="true"),
      dict(name="tfidf_nn", backend="tfidf_nn", condition="true"),
  ]
  c.reference = "rule_minimal_request"
  c.paper = dict(rule_minimal_request=100.0)
  c.n_resamples = 1000 if arg.debug else 10_000
  c.bootstrap_seed = 8901
  c.paired_seed = 8911
  return c
