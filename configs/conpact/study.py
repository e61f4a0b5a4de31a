"""ConPAct with trained models: the whole study from one command (tiny models trained here).

data (expert play on the SOURCE split, misperceiving demonstrator) -> tokenizer -> base planner and
base actor (separate tiny Qwen3s from scratch, separate seeds and noise streams) -> online
conditions on the evaluation split (ReAct, Self-Refine, resampling, Plan-Act, Assertion, ConPAct-I
and the Table 18 ablations) -> ConPAct-I rollouts on SOURCE instances -> ConPAct-S / R
(full, No Sup., No Replay) and the token-matched baseline (conpact/train) -> evaluation of every
trained pair -> report. Resumable: each stage is skipped when its done marker is present.

python launch.py --config=configs/conpact/study.py --workdir=runs/conpact_study   # README run
python launch.py --config=configs/conpact/study.py:debug=True --workdir=runs/conpact_study_dbg
python launch.py --config=configs/conpact/study.py:small=True --workdir=runs/conpact_study_small
python launch.py --config=configs/conpact/study.py:checkpoint=/path/to/Qwen3-0.6B --workdir=runs/cs_q

The re-check study (configs/conpact/README.md, "Targeted re-check: two arms", pre-registered
there): arm C is the demonstrations' whole-belief redraw (the recipe above), arm R the targeted
re-check. `arms=True` runs every arm from one command (experiments/conpact/arms.py): C with
pipeline seed 0, R with pipeline seeds 0 and 1 (new data noise streams and model initialisations),
each a study of its own in <workdir>/<C0|R0|R1> that evaluates Plan-Act, Assertion and ConPAct-I
only, on 16 seeds of each evaluated BabyAI task, with no ConPAct-S/R stage; then the comparison
in <workdir>/summary.md. `arm=` picks one of those studies alone:
python launch.py --config=configs/conpact/study.py:arms=True --workdir=runs/cp_arms
python launch.py --config=configs/conpact/study.py:arms=True,debug=True --workdir=runs/cp_arms_dbg
python launch.py --config=configs/conpact/study.py:arms=True,arm=R,pipeline=1 --workdir=runs/cp_arms/R1
"""
import ml_collections

from agents.conpact import demonstration_spec
from configs import common
from configs.conpact import scripted as scripted_config
from configs.conpact import train as train_config
from lib.run.config_blocks import backend_config, host_block, model_block, plan_block

# Misperception rate of the demonstrators (per row; planner and actor draw independently). Fixed
# a priori at the scripted demo's perception noise (configs/conpact/scripted.py), never tuned on
# the evaluation split.
NOISE = 0.3
# Share of demonstration rows followed by a discussion row, fixed a priori (not tuned): the base
# roles learn ConPAct-I's discussion format, as a base LLM follows it zero-shot.
DISCUSS = 0.25
# Arm R's re-check failure rate: a targeted second look at the contested fields is six times as
# reliable as the first glance (NOISE / 6). Fixed a priori, before any arm ran (README).
RECHECK = 0.05
ARMS = ("C", "R")       # C: whole-belief redraw at NOISE (control); R: targeted re-check
# The studies of `arms=True`: (run name, arm, pipeline seed). Debug: the first two only.
ARM_RUNS = (("C0", "C", 0), ("R0", "R", 0), ("R1", "R", 1))
# The conditions of the two-arm comparison, evaluated on the powered instance set.
ARM_CONDITIONS = ("plan_act", "assertion", "conpact_i")
# Median expert solution length (BabyAI bot, first 20 source seeds) of the tasks where it exceeds
# 24 actions, measured with agents.conpact.demonstrations.expert_episode (source split only); the
# other four tasks need 5-6 actions (Sokoban: 10).
EXPERT_ACTIONS = {"BabyAI-BlockedUnlockPickup-v0": 34, "BabyAI-GoTo-v0": 54}
ONLINE = ("react", "self_refine", "resample", "plan_act", "assertion", "conpact_no_trigger",
          "conpact_no_feedback", "conpact_actor_only", "conpact_i")
# Conditions of every trained pair (Tables 20-22): Assertion gives initial D and correctness before
# any discussion, ConPAct-I the discussion, repair and residual D.
TRAINED = ("assertion", "conpact_i")
# (name, conpact/train recipe, curate switches) -- paper Table 20 data ablations + the baseline
RECIPES = (
    ("conpact_s", "conpact_s", {}),
    ("conpact_r", "conpact_r", {}),
    ("conpact_r_no_sup", "conpact_r", {"reconciliation_supervision": False}),
    ("conpact_r_no_replay", "conpact_r", {"reconciliation_replay": False}),
    ("baseline", "baseline", {}),
)


def _conditions(names, settings: dict) -> list[dict]:
  conds = scripted_config.conditions(subgoal_steps=demonstration_spec.SUBGOAL_STEPS)
  return [{**x, "settings": {**x["settings"], **settings}} for x in conds if x["name"] in names]


def get_config(arg=None):
  arg = common.parse_arg(arg, debug=False, checkpoint="", rollouts=2, sokoban=4, mg_per_task=4,
                         budget=24, steps=400, train_steps=100, small=False,
                         planner_epochs=10.0, actor_epochs=3.0, arm="", recheck=RECHECK,
                         pipeline=0, arms=False)
  d = arg.debug
  if arg.arm and arg.arm not in ARMS:
    raise common.ConfigArgError(f"unknown arm {arg.arm!r}; valid: {', '.join(ARMS)}")
  if arg.arms and not arg.arm:
    return _arms_config(arg)
  arg.arm = arg.arm or "C"
  if arg.arms and not d:   # the powered two-arm comparison: 16 seeds of every evaluated task
    arg.mg_per_task = 16
  if arg.small:   # a narrower, shorter variant (d=64, 150 steps per role; the first measured run)
    arg.sokoban, arg.mg_per_task, arg.budget, arg.steps, arg.train_steps = 10, 1, 16, 150, 30
    arg.planner_epochs = arg.actor_epochs = 0.0    # the measured small run: 150 steps each
  c = ml_collections.ConfigDict()
  c.experiment = "conpact/study"
  c.debug = d
  c.seed = 0
  c.start_fresh = False                      # True: retrain models from step 0 (stages still skip)
  c.label = "tiny models trained here"
  c.arm, c.pipeline = arg.arm, arg.pipeline   # the re-check study's arm and pipeline seed
  c.envs = ["sokoban", "minigrid"]
  c.minigrid_tasks = (["BabyAI-GoToRedBall-v0"] if d else list(demonstration_spec.BABYAI_TASKS))
  # evaluated tasks: those whose median expert solution fits the action cap A = C = `budget`;
  # at the CPU-scale cap of 24, BlockedUnlockPickup (34) and GoTo (54) would be unsolvable for
  # most levels even by the expert, so they are trained on but not evaluated (README).
  c.eval_minigrid_tasks = [t for t in c.minigrid_tasks
                           if arg.budget >= EXPERT_ACTIONS.get(t, 0) or arg.budget == 0]

  # 1. supervision rows (source split); noise fixed above, separate streams per role
  # discuss: share of rows followed by a discussion row (conflict turn, then a fresh look at the
  # same noise rate); react: ReAct-format actor rows too (the ReAct baseline runs the actor)
  # discussion: "redraw" (arm C) or "recheck" (arm R, failure rate `recheck`); pipeline k shifts
  # every noise stream and model seed, so seed k is a whole new draw of the pipeline
  c.data = dict(sokoban=3 if d else 60, babyai=2 if d else 20, noise=NOISE, discuss=DISCUSS,
                discussion="redraw" if arg.arm == "C" else "recheck", recheck=arg.recheck,
                react=not d, planner_seed=101 + 1000 * arg.pipeline,
                actor_seed=202 + 1000 * arg.pipeline)   # debug: one actor format
  # 2.-3. tokenizer and the two base models: a tiny Qwen3 from scratch (BPE trained on the rows),
  # or `checkpoint` (a local HF dir with its tokenizer) for both roles, paper scale
  size = (dict(hidden_size=64, intermediate_size=128, head_dim=16) if d or arg.small else
          dict(hidden_size=128, intermediate_size=384, head_dim=32))
  c.model = model_block(checkpoint=arg.checkpoint, preset="qwen3-tiny", vocab_size=2048,
                        overrides=dict(num_layers=2, num_heads=4, num_kv_heads=2,
                                       tie_word_embeddings=True, max_position_embeddings=4096,
                                       **size))
  # epochs per role (0: `steps`): the planner has ~1/7 of the actor's rows; the actor must see
  # its rows several times or it collapses onto the majority action (0.2 epochs in the first
  # small run: 189 of 192 MiniGrid actions were `go forward`)
  c.base = dict(planner_seed=1 + 10 * arg.pipeline, actor_seed=2 + 10 * arg.pipeline,
                epochs=dict(planner=0 if d else arg.planner_epochs,
                            actor=0 if d else arg.actor_epochs),
                train=dict(steps=30 if d else arg.steps, batch=8 if d or arg.small else 16,
                           bucket=0 if d else 64, lr=3e-3, warmup_frac=0.03, weight_decay=0.01,
                           # debug: 512 drops the 3-frame Sokoban rows (one bucket and its
                           # compile less; the debug models are too raw to use them anyway)
                           clip_norm=1.0, max_len=512 if d else 1024, log_every=20,
                           ckpt_every=200,
                           epochs=0.0))   # set per role from `epochs`

  # 4./7. evaluation-split episodes (conpact/eval with a Flax backend per role)
  # replies: the longest demonstration reply is 51 tokens with the study's BPE. Temperature 0.3:
  # the k rollouts differ (pass@k, pass^k) while a tiny model's low-probability tail (malformed
  # tags, seen at 0.7 in a debug run's transcripts) stays rare; set before any full-size result.
  reply = dict(actor_max_tokens=56, planner_max_tokens=56, temperature=0.3)
  ev = ml_collections.ConfigDict()
  ev.experiment = "conpact/eval"
  ev.seed = 0
  ev.envs = list(c.envs)
  ev.split = "evaluation"
  ev.instances = 2 if d else arg.sokoban     # Sokoban evaluation levels (200 = paper)
  ev.minigrid_per_task = 1 if d else arg.mg_per_task
  ev.minigrid_tasks = list(c.eval_minigrid_tasks)
  ev.rollouts = arg.rollouts                 # k of avg@k / pass@k / pass^k
  ev.max_live = None
  ev.host = host_block()   # where the envs run: executor inline | processes | ray
  ev.n_resamples = 200 if d else 2000
  ev.budget_cap = 4 if d else arg.budget     # A = C cap per episode (0: the paper's budgets)
  ev.label = c.label
  # batches padded to >= min_batch rows: few compiled programs (compiles dominate small runs)
  ev.backend = backend_config("flax", model=dict(checkpoint=""), max_batch=256, min_batch=32)
  ev.actor_backend = backend_config("flax", model=dict(checkpoint=""), max_batch=256,
                                    min_batch=32)
  ev.scripted = dict(noise={}, abstain=0.0)
  ev.conditions = _conditions(ARM_CONDITIONS if arg.arms else ONLINE, reply)
  ev.paired_vs = list(scripted_config.PAIRED_VS)
  c.online = ev
  c.trained_conditions = list(TRAINED)

  # 5. source rollouts for curation: ConPAct-I (the condition conpact/train curates) on SOURCE
  # instances. Sokoban: no base rollout succeeded in the measured runs, so few levels; BabyAI
  # carries the curated data: every source seed of each evaluated task x 6 rollouts (2,412
  # episodes), so that ConPAct-R keeps >= 200 rows per role: it keeps ~0.09 planner rows per
  # ConPAct-I episode (measured: 209 planner / 509 actor rows from these 2,412)
  c.source = dict(sokoban=2 if d else 10 if arg.small else 2,
                  mg_per_task=1 if d else 2 if arg.small else 100,
                  rollouts=2 if d or arg.small else 6, conditions=["conpact_i"])

  # 6. ConPAct-S / R (+ data ablations) and the token-matched baseline via conpact/train
  # continued SFT of each base role; at CPU scale capped at train_steps (paper: 3 reference epochs,
  # data_stats.json records budget_met) with a from-scratch-sized learning rate (paper 1e-5 at 8B)
  c.train = train_config.get_config("debug=True" if d else None)
  c.train.train.update(dict(batch=4 if d else 8, max_len=1024, lr=1e-3,
                            max_steps=2 if d else arg.train_steps, log_every=10, ckpt_every=100))
  # debug (a CI test): one recipe and its baseline keep the run to a few minutes
  c.recipes = [dict(name=n, recipe=r, curate=cur) for n, r, cur in RECIPES
               if not arg.arms and (not d or n in ("conpact_r", "baseline"))]
  # `--plan`: the largest training step, a base role's SFT step (`base.train` batch x max_len;
  # the recipes' continued SFT uses conpact/train's smaller batch)
  c.plan = plan_block(trainer="sft", rows=c.base.train.batch, seq_len=c.base.train.max_len)
  return c


def _arms_config(arg) -> ml_collections.ConfigDict:
  """Every study of ARM_RUNS from one command: each run's config is the one `arm=`, `pipeline=`
  give alone (so a run started alone resumes inside the whole), overridable per run
  (`--config.runs.R1.online.host.executor=ray`)."""
  c = ml_collections.ConfigDict()
  c.experiment = "conpact/arms"
  c.debug = arg.debug
  c.seed = 0
  c.label = "tiny models trained here"
  c.recheck = arg.recheck
  shared = {k: v for k, v in arg.to_dict().items() if k not in ("arm", "pipeline")}
  c.runs = ml_collections.ConfigDict()
  for name, arm, pipeline in ARM_RUNS[:2] if arg.debug else ARM_RUNS:
    args = ",".join(f"{k}={v}" for k, v in {**shared, "arm": arm, "pipeline": pipeline}.items())
    c.runs[name] = get_config(args)   # with its `debug`, as launch.py records a run alone
  c.comparisons = list(ARM_CONDITIONS[:2])   # ConPAct-I minus each, Holm over the two
  c.n_resamples = 200 if arg.debug else 2000
  first = c.runs[ARM_RUNS[0][0]]   # `--plan`: the runs' largest step (the same in every run)
  c.model, c.plan = first.model, first.plan
  return c
