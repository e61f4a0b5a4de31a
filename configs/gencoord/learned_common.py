"""Shared blocks of the GenCoord learned-backend configs (model, optimizer, tokenizer, eval).

Not a launchable config itself: configs/quickstart.py and configs/gencoord/learned.py build on
`base(arg)` and set recipes, evaluation suite and conditions.
"""
import ml_collections

from lib.run.config_blocks import model_block, plan_block


def base(arg) -> ml_collections.ConfigDict:
  c = ml_collections.ConfigDict()
  c.experiment = "gencoord/learned"
  c.title = "GenCoord learned backends"
  c.debug = arg.debug
  c.seeds = list(range(arg.seeds))
  c.recipes = ["direct_dsl"]
  c.max_rows = 0                       # 0: every supervision row (debug runs subsample)
  # Forward training worlds: clusters per template of the `train` suite (the paper: 60, i.e.
  # 480 clusters, 1,920 Direct Short DSL rows; suites.TRAIN_PER_TEMPLATE_MAX at most).
  c.train_clusters_per_template = 60
  # How the from-scratch BPE cuts numbers: "digits" (one token per digit) or "whole" (a frequent
  # number is one token; agents/gencoord/learned/tokenizer.py). A checkpoint brings its own.
  c.number_tokens = "digits"
  c.export_hf = True                   # final model + tokenizer in Hugging Face format
  # A tiny Qwen3 trained from scratch (vocabulary: a DSL-aware BPE of vocab_size trained on the
  # rows); `checkpoint` (a local HF dir) starts from a real model and its own tokenizer.
  c.model = model_block(preset="qwen3-tiny", vocab_size=1024, overrides=dict(
      hidden_size=128, intermediate_size=384, num_layers=2, num_heads=4, num_kv_heads=2,
      head_dim=32, tie_word_embeddings=True, max_position_embeddings=4096))
  # Paper recipe: AdamW, cosine with 3% warm-up, weight decay 0.01, clip 1.0, effective batch
  # 16, final-step checkpoint; lr raised for a from-scratch model, epochs as each config says.
  # accum_steps: micro-batches per update (`batch` rows each update; the paper: micro 4 x 4).
  c.train = dict(epochs=2, batch=16, lr=3e-3, warmup_frac=0.03, weight_decay=0.01,
                 clip_norm=1.0, log_every=10, ckpt_every=60, batching="rows", accum_steps=1,
                 select=None,          # early stopping on a validation split (the quickstart)
                 # Short-context sender drill (agents/gencoord/learned/drill.py): sender rows of
                 # this many training worlds per template, prompted with the agent's own
                 # sections only, one batch of `batch` of them after every full batch (0: off).
                 drill=dict(clusters_per_template=0, batch=32))
  c.mesh = dict(data=1, fsdp=1)        # FSDP over data x fsdp devices (agents/gencoord/learned/train)
  # `--plan`: one SFT step of `train.batch` rows. Rows are left-padded to the longest: 368 tokens
  # for the embedded recipes (freeform, with the three-recipe BPE; the quickstart's direct_dsl
  # rows with its own BPE: 272), measured 2026-12-02.
  c.plan = plan_block(trainer="sft", rows=c.train.get_ref("batch"), seq_len=384)
  c.eval = dict(suite="heldout", max_clusters=16 if arg.debug else 0, max_batch=256,
                reference="dsl", conditions=[dict(name="dsl", recipe="direct_dsl")],
                timing_clusters=8 if arg.debug else 40, throughput=True, spread_clusters=False,
                n_resamples=10_000, bootstrap_seed=8901, paired_seed=8911)
  c.paper = {}
  c.bar = None                         # the quickstart's pass bar (success_pct) for its verdict
  return c
