"""Shared blocks of the GenCoord learned-backend configs (model, optimizer, tokenizer, eval).

Not a launchable config itself: configs/quickstart.py and configs/gencoord/learned.py build on
`base(arg)` and set recipes, evaluation suite and conditions.
"""
import ml_collections


def base(arg) -> ml_collections.ConfigDict:
  c = ml_collections.ConfigDict()
  c.experiment = "gencoord/learned"
  c.title = "GenCoord learned backends"
  c.seeds = list(range(arg.seeds))
  c.recipes = ["direct_dsl"]
  c.max_rows = 0                       # 0: every supervision row (debug runs subsample)
  c.export_hf = True                   # final model + tokenizer in Hugging Face format
  c.tokenizer = dict(vocab_size=1024)
  # A tiny Qwen3 trained from scratch; `checkpoint` (a local HF dir) starts from a real model.
  c.model = dict(checkpoint="", hidden=128, layers=2, heads=4, kv_heads=2, head_dim=32, mlp=384)
  # Paper recipe: AdamW, cosine with 3% warm-up, weight decay 0.01, clip 1.0, effective batch
  # 16, final-step checkpoint; lr raised for a from-scratch model, epochs as each config says.
  c.train = dict(epochs=2, batch=16, lr=3e-3, warmup_frac=0.03, weight_decay=0.01,
                 clip_norm=1.0, log_every=10, ckpt_every=60)
  c.eval = dict(suite="heldout", max_clusters=16 if arg.debug else 0, max_batch=256,
                reference="dsl", conditions=[dict(name="dsl", recipe="direct_dsl")],
                timing_clusters=8 if arg.debug else 40, throughput=True,
                n_resamples=10_000, bootstrap_seed=8901, paired_seed=8911)
  c.paper = {}
  return c
