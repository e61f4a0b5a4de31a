"""GenCoord sender probe: does the sender's obtain quantity (need − holding) need more examples,
more width or other number tokens? (configs/gencoord/README.md, the recipe search)

python launch.py --config=configs/gencoord/sender_probe.py --workdir=runs/gencoord_sender_probe
python launch.py --config=configs/gencoord/sender_probe.py:debug=True --workdir=runs/sp_debug
python launch.py --config=configs/gencoord/sender_probe.py:rows=9600 --workdir=runs/sp_9600
python launch.py --config=configs/gencoord/sender_probe.py:rows=960,numbers=whole --workdir=runs/sp_whole

Each condition trains the quickstart's model shape (2 layers, d = 128, 4 heads, 2 KV heads) from
scratch for `steps` updates of batch 64 on `train_rows` distinct sequences, and scores 1,000 new
ones (agents/gencoord/learned/sender_probe.py). The default conditions: the quickstart's 960
sender rows with digit and whole-number tokens, twice the width, and ten times the rows.
About 8 minutes a condition on one CPU core (25 at twice the width); `:rows=N` runs one
condition, N rows, with `:numbers=` and `:width=` (default digits, 128).
"""
import ml_collections

from configs import common
from lib.run.config_blocks import model_block


def get_config(arg=None):
  arg = common.parse_arg(arg, debug=False, rows=0, numbers="digits", width=128, seed=0)
  c = ml_collections.ConfigDict()
  c.experiment = "gencoord/sender_probe"
  c.debug = arg.debug
  c.seed = arg.seed
  c.steps = 20 if arg.debug else 2000
  c.test_rows = 64 if arg.debug else 1000
  c.eval_rows = 64 if arg.debug else 1000      # training rows re-scored for train exact
  c.vocab_size = 400
  grid = [(960, "digits", 128), (960, "whole", 128), (960, "digits", 256), (9600, "digits", 128)]
  if arg.rows:
    grid = [(arg.rows, arg.numbers, arg.width)]
  if arg.debug:
    grid = [(128, "digits", 32), (128, "whole", 32)]
  c.conditions = [dict(train_rows=n, numbers=numbers, hidden_size=d) for n, numbers, d in grid]
  c.model = model_block(preset="qwen3-tiny", vocab_size=c.vocab_size, overrides=dict(
      hidden_size=128, intermediate_size=384, num_layers=2, num_heads=4, num_kv_heads=2,
      head_dim=32, tie_word_embeddings=True, max_position_embeddings=256))
  c.train = dict(epochs=1, batch=64, lr=3e-3, warmup_frac=0.03, schedule="cosine",
                 decay_frac=0.2, weight_decay=0.01,
                 clip_norm=1.0, log_every=10 if arg.debug else 100, ckpt_every=1_000_000,
                 accum_steps=1)
  c.mesh = dict(data=1, fsdp=1)
  return c
