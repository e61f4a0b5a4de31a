"""GenCoord sender fit: does a trained model write the sender's obtain quantity (need − holding)
on the rows it trained on, on new instances, from full prompts and from drill prompts?
(configs/gencoord/README.md, "Quickstart robustness")

python launch.py --config=configs/gencoord/sender_fit.py --workdir=runs/sf_quickstart
python launch.py --config=configs/gencoord/sender_fit.py:seed=3 --workdir=runs/sf_s3 \
    --config.run_dir=runs/qs_s3
python launch.py --config=configs/gencoord/sender_fit.py:debug=True --workdir=runs/sf_debug \
    --config.run_dir=runs/qs_debug

Reads the model of seed `seed` that a `gencoord/learned` run (the quickstart, a study) trained
in `run_dir`, and scores its sender rows teacher-forced: the validation split's, the full rows
it trained on, and every `drill_stride`-th drill row it trained on
(experiments/gencoord/sender_fit.py). Under a minute on one CPU core for the quickstart's model.
"""
import ml_collections

from configs import common


def get_config(arg=None):
  arg = common.parse_arg(arg, debug=False, seed=0, recipe="direct_dsl")
  c = ml_collections.ConfigDict()
  c.experiment = "gencoord/sender_fit"
  c.debug = arg.debug
  c.run_dir = "runs/quickstart"     # a finished gencoord/learned run directory
  c.recipe = arg.recipe             # a forward training recipe of that run
  c.seed = arg.seed                 # which of its seeds' models
  c.split = "intervention"          # the validation split (never `heldout`)
  c.drill_stride = 24               # every 24th drill row: 640 of the quickstart's 15,360
  c.max_rows = 32 if arg.debug else 0   # per set; 0: all
  return c
