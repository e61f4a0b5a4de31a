"""GenCoord drill probe: the quickstart's sender drill alone, minutes a seed, to choose a recipe
on the validation split before paying for it at full length (configs/gencoord/README.md,
"Quickstart robustness").

python launch.py --config=configs/gencoord/drill_probe.py:seed=3 --workdir=runs/dp_s3
python launch.py --config=configs/gencoord/drill_probe.py:debug=True --workdir=runs/dp_debug
python launch.py --config=configs/gencoord/drill_probe.py:seed=3 --workdir=runs/dp_s3_wd \
    --config.train.weight_decay=0.1

Trains the quickstart's model (configs/gencoord/learned_common.py: 2 layers, d = 128, its BPE,
AdamW at lr 3e-3 with a cosine schedule) on the 15,360 drill rows only, batch 32 as in the
quickstart's drill, for `train.epochs` epochs of them (480 steps each), and records the validation
split's sender rows (own-section prompts) every half epoch (experiments/gencoord/drill_probe.py).
About 2 minutes an epoch on one CPU core.
"""
import ml_collections

from configs import common
from configs.gencoord import learned_common


def get_config(arg=None):
  arg = common.parse_arg(arg, debug=False, seed=0, epochs=5)
  quick = learned_common.base(ml_collections.ConfigDict(dict(debug=False, seeds=1)))
  c = ml_collections.ConfigDict()
  c.experiment = "gencoord/drill_probe"
  c.debug = arg.debug
  c.seed = arg.seed
  c.recipe = "direct_dsl"
  c.split = "intervention"                      # the validation split (never `heldout`)
  c.train_clusters_per_template = quick.train_clusters_per_template   # the BPE's rows
  c.number_tokens = quick.number_tokens
  c.drill_clusters_per_template = 20 if arg.debug else quick.train.drill.clusters_per_template
  c.model = quick.model
  c.model.overrides.max_position_embeddings = 512       # drill prompts are ~110 tokens
  c.train = dict(quick.train)
  for key in ("select", "drill", "batching"):            # the drill rows are the whole run here
    del c.train[key]
  # lr 3e-3 and a cosine over the probe's epochs (the probe's figures in configs/gencoord/
  # README.md were measured so; the quickstart's WSD would hold the lr flat over a short probe).
  c.train.update(batch=quick.train.drill.batch, epochs=1 if arg.debug else arg.epochs,
                 schedule="cosine", lr=3e-3,
                 log_every=1 if arg.debug else 10, ckpt_every=1_000_000)
  c.validate_every_epochs = 0.5
  c.reach = 0.95                 # summary: the first validation step with this share exact
  c.max_val_rows = 32 if arg.debug else 0       # 0: all 320 validation senders
  c.drill_stride = 24            # every 24th drill row scored at the end (640 of 15,360)
  c.mesh = dict(data=1, fsdp=1)
  return c
