"""CPU-scale demonstration of the world-model audit: data -> tiny SFT base -> GRPO GT/MIS/COIN
and OPSD GT/MIS -> pass@k / loop-ratio evaluation -> model-based probes.

python launch.py --config=configs/wm/demo.py --workdir=runs/wm_demo              # ~30 min, 2 cores
python launch.py --config=configs/wm/demo.py:steps=300 --workdir=runs/wm_demo_300
python launch.py --config=configs/wm/demo.py:debug=True --workdir=runs/wm_demo_debug   # minutes
"""
import ml_collections

from configs import common
from configs.wm import data as wm_data_config
from configs.wm import eval as wm_eval_config
from configs.wm import train as wm_train_config
from lib.run.config_blocks import model_block, plan_block


def get_config(arg=None):
  arg = common.parse_arg(arg, debug=False, steps=200, sft_steps=1000, eval_steps=10, samples=8)
  c = ml_collections.ConfigDict()
  c.experiment = "wm/demo"
  c.seed = 0
  c.scale_label = "CPU scale, tiny model"
  c.history_window = 1                       # short prompts for a CPU-sized context
  c.conditions = ["GRPO-GT", "GRPO-MIS", "GRPO-COIN", "OPSD-GT", "OPSD-MIS"]

  d = wm_data_config.get_config("debug")     # 2 ScienceWorld tasks + TextWorld games
  d.alfworld.enabled = False
  d.history_window = c.history_window
  d.bench_repeats = 0
  d.noisy_reps = 2
  d.n_train, d.n_heldout = 10_000, 200       # every transition of the small pool
  d.scienceworld.train_variations = [0, 1, 3, 4]
  # 100 generated training games: the agent rows (steps of both regimes) must teach a
  # from-scratch model to act in games it has never seen; 4 unseen games for evaluation
  if not arg.debug:
    d.textworld.train_seeds = list(range(1, 41)) + list(range(201, 261))
    d.textworld.eval_seeds = [101, 102, 103, 104]
  else:
    d.textworld.train_seeds = [1, 2, 3, 4, 5, 6]
  c.data = d

  # the tiny policy: qwen3-tiny widened a little, BPE trained on the data
  c.model = model_block(preset="qwen3-tiny", vocab_size=1024,
                        overrides={"hidden_size": 64, "intermediate_size": 128, "num_layers": 2})
  # SFT warm start on short replies (agents/wm/warmstart.py); length-grouped batches
  # teacher_view: the OPSD teacher's prompt (privileged next observation) is in the SFT data too
  # epochs > 0 sizes the run in passes over the rows instead of `steps`; bucket: the
  # length-bucket granularity in tokens (0: power-of-two buckets, lib.sft.batches)
  c.sft = dict(steps=150 if arg.debug else arg.sft_steps, epochs=0.0, batch=8, bucket=0,
               max_len=512, log_every=25, ckpt_every=100, teacher_view=True,
               # expert + noisy-expert episodes: a tiny model trained on expert steps of 40
               # games alone never picks a listed action in unseen games (95% action failure)
               agent_rows="all",
               drop_repeats=False)   # True: one agent row per run of a repeated step
  c.sft_optim = dict(lr=3e-3, warmup_frac=0.05, schedule="cosine", weight_decay=0.01, b1=0.9,
                     b2=0.999, clip_norm=1.0)
  c.check = dict(prompts=8)                  # GRPO-GT groups sampled from BASE before training

  t = wm_train_config.get_config("debug=True")   # lexical embedder; Table 6 otherwise
  t.train.steps = 3 if arg.debug else arg.steps
  # CPU budget: 4 prompts x 4 rollouts, prompts <= 256 tokens padded to one shape, replies <= 48
  t.train.batch, t.train.max_input_tokens, t.train.max_output_tokens = 4, 256, 48
  t.train.pad_prompts_to = t.train.max_input_tokens
  t.train.log_every, t.train.ckpt_every = 25, 50
  t.grpo.group_size, t.grpo.minibatch_prompts, t.opsd.minibatch = 4, 4, 4
  t.optim.lr = 1e-4                  # Table 6's 1e-6 barely moves a 0.1M-parameter model
  c.train_template = t
  # `--plan`: the train template's GRPO update (its rows, prompt + reply tokens, the KL reference
  # and the rollout cache resident); the SFT warm start's step has no reference or cache.
  # Resolved here: the study (configs/wm/study.py) changes neither the template's batch nor lengths
  c.plan = plan_block(**{k: t.plan[k] for k in t.plan})

  e = wm_eval_config.get_config("debug")
  e.scale_label = c.scale_label
  # None: the nested evaluation's summary takes no debug label of its own (its directory holds
  # no config.json to read one from); the demo's and the study's summaries carry it.
  e.debug = None
  # CPU budget: short episodes; every condition x level x sample runs through the host loop
  e.max_steps = 5 if arg.debug else arg.eval_steps
  e.max_tokens = 48
  e.samples = 4 if arg.debug else arg.samples
  e.ks = [1, 2, 4, 8]
  e.max_live = 8
  e.n_heldout = 12 if arg.debug else 24
  e.predict_max_tokens = t.train.max_output_tokens
  # Unseen games / variations, plus 4 TextWorld training games the warm start saw (labelled
  # list@seen): the tiny agent solves no unseen game, so the seen run is where the conditions'
  # acting skill (and its change under world-model training) shows.
  e.runs = [("textworld", "list"), ("scienceworld", "no-list"), ("textworld", "list", "train")]
  e.seen_levels = 2 if arg.debug else 4
  e.scienceworld.eval_variations = [2]
  e.textworld.train_seeds = list(d.textworld.train_seeds)   # the seen run's levels
  if not arg.debug:
    e.textworld.eval_seeds = list(d.textworld.eval_seeds)
  e.history_window = c.history_window
  c.eval = e
  c.probes = dict(per_game=3, samples=12 if arg.debug else 16, n_samples=4 if arg.debug else 6,
                  max_new_tokens=48)
  return c
