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
  c.max_rows = 480 if arg.debug else 0   # 0: every supervision row (debug runs subsample)
  # Forward training worlds: clusters per template of the `train` suite (the paper: 60, i.e.
  # 480 clusters, 1,920 Direct Short DSL rows; suites.TRAIN_PER_TEMPLATE_MAX at most).
  c.train_clusters_per_template = 60
  # How the from-scratch BPE cuts numbers: "digits" (one token per digit) or "whole" (a frequent
  # number is one token; agents/gencoord/learned/tokenizer.py). A checkpoint brings its own.
  c.number_tokens = "digits"
  c.export_hf = True                   # final model + tokenizer in Hugging Face format
  # Run directories whose models this run may copy instead of training, when they are provably
  # the same model (same recipe rows, tokenizer, model/train config, seed and numerics:
  # agents/gencoord/learned/reuse.py), e.g. `--config.reuse_models_from='("runs/quickstart",)'`.
  c.reuse_models_from = ()
  # A tiny Qwen3 trained from scratch (vocabulary: a DSL-aware BPE of vocab_size trained on the
  # rows); `checkpoint` (a local HF dir) starts from a real model and its own tokenizer.
  c.model = model_block(preset="qwen3-tiny", vocab_size=1024, overrides=dict(
      hidden_size=128, intermediate_size=384, num_layers=2, num_heads=4, num_kv_heads=2,
      head_dim=32, tie_word_embeddings=True, max_position_embeddings=4096))
  # The one recipe of every learned model (the quickstart's; configs/gencoord/README.md, "Why
  # the recipe is what it is"). The paper's optimizer is AdamW, cosine with 3% warm-up, weight
  # decay 0.01, clip 1.0; a from-scratch model takes a raised lr and a WSD schedule (stable,
  # then a cosine over the last 20%: with a cosine over the whole run, seeds that fix the
  # sender's quantity late had no lr left to do it). lr 1.5e-3, not 3e-3: at 3e-3 validation
  # swung by tens of points in the stable phase and a seed lost the arithmetic it had learned
  # in the drill lead. accum_steps: micro-batches per update.
  # From scratch a 0.5M-parameter model needs many more updates than the paper's fine-tune
  # (2 epochs, 240 steps at batch 16, lr 1e-5): the budget is a ceiling of 20 epochs at batch 8
  # and the stop is read off the validation split (`select`, below).
  c.train = dict(epochs=1 if arg.debug else 20, batch=8, lr=1.5e-3, warmup_frac=0.03,
                 # lib.train.optim.lr_schedule: "cosine" over the whole run, or "wsd" (stable
                 # at lr until the last `decay_frac` of the steps, then cosine)
                 schedule="wsd", decay_frac=0.2,
                 weight_decay=0.01, clip_norm=1.0, accum_steps=1,
                 # Validation runs on a log step. The debug subsample keeps only the rows of
                 # whole contrast groups, so its steps per epoch (the validation period) depend
                 # on the drawn rows and the worlds' facts: log every step there.
                 log_every=1 if arg.debug else 10,
                 # A checkpoint costs ~0.8 CPU-s here (orbax); every 480 steps still resumes a
                 # killed run within ~1 min of training, and changes nothing in the model.
                 ckpt_every=60 if arg.debug else 480,
                 # Contrast batches: each batch of 8 holds 2 worlds, each with both bindings and
                 # both role views (rows whose prompts differ only there, agents/gencoord/
                 # learned/sft_rows.contrast_groups), so the push towards one binding or one
                 # peer from a row is cancelled by its partners in the same update.
                 # "rows": each epoch a plain permutation of the rows.
                 batching="contrast",
                 # Early stopping on the validation split: the forward `intervention` clusters,
                 # scored by teacher-forced greedy exact match after every epoch; from epoch 6 on,
                 # the first epoch at which every validation cluster is exact ends training
                 # (agents/gencoord/learned/validation.py). It never looks at a held-out
                 # cluster. Floats, so `--config.train.select.every_epochs=0.25` parses. None:
                 # train the whole budget. keep: the model kept, the final step's ("last") or
                 # the best validation's ("best": highest cluster, then row exact match; the
                 # stable phase's swings should not decide which model is evaluated).
                 select=dict(split="intervention", every_epochs=1.0,
                             min_epochs=1.0 if arg.debug else 6.0, stop_at=1.0, keep="best"),
                 # The short-context sender drill (agents/gencoord/learned/drill.py): the sender
                 # rows of this many training worlds per template (suites
                 # .TRAIN_PER_TEMPLATE_MAX), prompted with the agent's own sections only (~107
                 # tokens against ~370 for a full row), a batch of `batch` of them after every
                 # full batch; 0: off. Without it the model fits its training rows but writes the
                 # wrong obtain quantity (need - holding) on most new instances
                 # (configs/gencoord/README.md, "Looking for a recipe").
                 # lead_epochs: epochs of drill batches alone before the full rows start
                 # (a curriculum; the schedule and the step budget include them): the sender's
                 # quantity is learnt from short rows first, which the interleaved recipe
                 # alone failed to do on some seeds.
                 drill=dict(clusters_per_template=20 if arg.debug else 960, batch=32,
                            lead_epochs=3.0))
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
