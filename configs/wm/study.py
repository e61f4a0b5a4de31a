"""World-model audit study at CPU scale: all eight conditions x seeds on unseen TextWorld games.

TextWorld only (list regime). Training games are generated at several difficulty settings (rooms,
objects, quest length; cached on disk, in parallel processes); BASE is validated on SOURCE-side
validation games at every setting (the knob table), and the unseen evaluation games are generated
at one setting (`rooms`, `objects`, `quest`), chosen from that table, never from the unseen
results. Stages are resumable; data, games and the one warm start (BASE) are shared by every
seed, and every trained condition of every seed starts from BASE.

python launch.py --config=configs/wm/study.py --workdir=runs/wm_study                  # 8 x 3
python launch.py --config=configs/wm/study.py:validate_only=True --workdir=runs/wm_study  # knobs
python launch.py --config=configs/wm/study.py:conditions=BASE --workdir=runs/wm_study  # BASE only
python launch.py --config=configs/wm/study.py:debug=True --workdir=runs/wm_study_debug   # ~4 min
"""
from agents.wm.condition_table import CONDITIONS
from configs import common
from configs.wm import demo as wm_demo_config

# (rooms, objects, quest length): the training mix, and the validation knob table (which adds a
# harder setting than any training game)
TRAIN_SETTINGS = [(1, 2, 1), (2, 3, 2)]
VAL_SETTINGS = [(1, 2, 1), (2, 3, 2), (3, 4, 3)]


def get_config(arg=None):
  arg = common.parse_arg(arg, debug=False, seeds=3, rooms=1, objects=2, quest=1,
                         train_games=100, unseen_games=64, val_games=24, val_samples=4,
                         samples=2, steps=60, sft_epochs=4.0, width=128, eval_steps=8,
                         games_dir="runs/wm_games", validate_only=False, conditions="")
  c = wm_demo_config.get_config(f"debug={arg.debug}")   # the demo's model, SFT and RL blocks
  c.experiment = "wm/study"
  c.scale_label = "CPU scale, tiny model"
  c.seeds = list(range(2 if arg.debug else arg.seeds))
  if arg.conditions:          # a subset, "+"-separated (e.g. BASE+GRPO-GT); BASE must be in it
    c.conditions = arg.conditions.split("+")
    unknown = [n for n in c.conditions if n not in CONDITIONS]
    if unknown or "BASE" not in c.conditions:
      raise ValueError(f"conditions: {unknown or 'BASE missing'}; valid: {'+'.join(CONDITIONS)}")
  else:
    # debug (a CI test): GT and its MIS control beside BASE (the two GRPO conditions share
    # compiled programs; the OPSD trainer's own test is tests/experiments/wm/test_wm_train.py)
    c.conditions = (["BASE", "GRPO-GT", "GRPO-MIS"] if arg.debug
                    else list(CONDITIONS))
  c.validate_only = arg.validate_only

  d = c.data
  d.scienceworld.enabled = False
  d.bench_repeats = 0
  # data episodes: a noisy expert that loses its plan repeats "look" to the step limit, and in
  # the debug pool such a run would hold most transitions (no MIS derangement exists then)
  d.max_steps = 8 if arg.debug else 30
  tw = d.textworld
  tw.games_dir = "" if arg.debug else arg.games_dir    # "" = <workdir>/data/textworld_games
  tw.processes = 2
  tw.train_settings = [list(s) for s in TRAIN_SETTINGS[:1 if arg.debug else None]]
  tw.train_seeds = list(range(1, 7 if arg.debug else 1 + arg.train_games))
  # unseen evaluation games: their own seed range, at the chosen setting
  tw.world_size, tw.nb_objects, tw.quest_length = arg.rooms, arg.objects, arg.quest
  tw.eval_seeds = list(range(9001, 9001 + (4 if arg.debug else arg.unseen_games)))

  # validation: BASE (and a random-admissible-action reference) on source-side games that are
  # neither training nor unseen games, at every setting of the knob table
  c.validation = dict(seeds=list(range(5001, 5001 + (3 if arg.debug else arg.val_games))),
                      settings=[list(s) for s in VAL_SETTINGS[:1 if arg.debug else None]],
                      samples=2 if arg.debug else arg.val_samples)

  # the policy: the GenCoord quickstart's width (128, MLP 384) learns to copy a listed action;
  # the demo's width 64 trained for 400 steps wrote malformed actions (53% action failure and
  # pass@1 = 0 on every validation setting, below the random-action reference)
  if not arg.debug:
    c.model.overrides.update(hidden_size=arg.width, intermediate_size=3 * arg.width,
                             head_dim=arg.width // 4, num_heads=4, num_kv_heads=2)
  # one warm start shared by every seed (BASE), sized in passes over its rows; debug: 150
  # steps, the fewest that close the tags (100: 12% well-formed, no reward spread)
  c.sft.steps = 150
  c.sft.epochs = 0.0 if arg.debug else arg.sft_epochs
  c.sft.batch = 8 if arg.debug else 16
  c.sft.bucket = 64                 # 64-token length buckets (lib/sft/batches.length_grouped)
  c.sft.ckpt_every = 200
  # one agent row per run of a repeated (observation, action) step: the noisy expert's "look"
  # loops made a warm start that answers "look" everywhere (agents/wm/warmstart.sft_rows)
  c.sft.drop_repeats = True
  c.check.prompts = 4 if arg.debug else 8
  c.train_template.train.steps = 2 if arg.debug else arg.steps

  e = c.eval
  e.scienceworld.enabled = False
  e.runs = [("textworld", "list")]
  e.textworld = tw.to_dict()
  e.max_steps = 5 if arg.debug else arg.eval_steps
  e.samples = 2 if arg.debug else arg.samples
  e.ks = [k for k in (1, 2, 4, 8) if k <= e.samples]
  # episodes in flight (one batched model call per turn); each holds a child process with its
  # Z-machine, so memory, not the model, sets the ceiling
  e.max_live = 32
  e.n_resamples = 200 if arg.debug else 2000
  e.n_heldout = 8 if arg.debug else 48
  # overlap: each condition's seeds pooled (samples x seeds replies at a shared decision point;
  # per seed, `samples` = 2 replies fall below the 4 an overlap estimate needs)
  c.report = dict(n_resamples=200 if arg.debug else 2000, trace_samples=50 if arg.debug else 300,
                  overlap_pool_seeds=True, overlap_min_samples=4)
  c.probes.enabled = False          # the study's overlap comes from sampled eval actions
  return c
