"""ConPAct-S / ConPAct-R SFT of a separate planner and actor, or the token-matched baseline.

# 1. log ConPAct-I rollouts on SOURCE instances (scripted here; any backend works):
python launch.py --config=configs/conpact/scripted.py:instances=20 --workdir=runs/cp_source \
    --config.split=source --config.envs='("sokoban",)'
# 2. a recipe (conpact_s | conpact_r; Table 20 ablations: sup=False = No Sup., replay=False =
#    No Replay, both keep consistency filtering), then evaluate each role's export:
python launch.py --config=configs/conpact/train.py:source=runs/cp_source,recipe=conpact_r --workdir=runs/cp_r
# 3. the baseline: continued SFT on plain demonstrations, token-matched per role to runs/cp_r:
python launch.py --config=configs/conpact/train.py:recipe=baseline,rows=runs/demos/baseline.jsonl,match=runs/cp_r --workdir=runs/cp_base

Fields (the interface experiments/conpact/study.py calls; experiments/conpact/train.py has the
rules):
  recipe       "conpact_s" | "conpact_r" | "baseline"
  source       a conpact/eval workdir whose results.jsonl holds SOURCE-split logs (recipes only)
  conditions   the logged conditions curated (default: ConPAct-I, whose discussions give the
               reconciliation examples); envs: the envs curated ([] = every env in the logs)
  roles        dict(planner=<HF dir>, actor=<HF dir>): each role's initial checkpoint; "" = the
               embedded tiny random model of `model` (tests)
  curate       dict(consistency_filtering, reconciliation_supervision, reconciliation_replay,
               success_only) -- paper Table 20 / Fig. 6a
  baseline     dict(rows=<jsonl of {"messages", "target", "meta": {"role"}}> plain Plan-Act
               demonstrations: the baseline's data, and for a recipe the three-epoch reference
               that sets its token budget; match=<conpact/train workdir> whose data_stats.json
               gives the target tokens per role the baseline is matched to)
  reference_epochs  passes over the reference (paper Table 7: 3)
  train        dict(batch, max_len, lr, max_steps (0 = the budget decides), log_every, ckpt_every)
  start_fresh  True: discard checkpoints and train from step 0
Outputs: <workdir>/<role>/export (HF dir with tokenizer), <workdir>/data_stats.json, summary.*.
`:scale=paper` plans one Qwen3-8B role at batch 8 x 4,096 tokens, one row per device per
accumulation micro-batch (configs/paper_scale.py):
python launch.py --config=configs/conpact/train.py:scale=paper --workdir=runs/cp_plan --plan \
    --config.mesh.fsdp=8 --config.plan.device_memory_gib=80
"""
import ml_collections

from configs import common, paper_scale
from lib.run.config_blocks import model_block, plan_block

RECIPES = ("conpact_s", "conpact_r", "baseline")


def get_config(arg=None):
  arg = common.parse_arg(arg, debug=False, recipe="conpact_r", source="", env="", planner="",
                         actor="", rows="", match="", sup=True, replay=True, filtering=True,
                         max_steps=0, scale="")
  if arg.recipe not in RECIPES:
    raise ValueError(f"recipe={arg.recipe!r}; valid: {', '.join(RECIPES)}")
  c = ml_collections.ConfigDict()
  c.experiment = "conpact/train"
  c.seed = 42  # paper Table 7 training seed
  c.recipe = arg.recipe
  c.source = arg.source  # a conpact/eval workdir (SOURCE split)
  c.conditions = ["conpact_i"]  # whose logs are curated
  c.envs = [e for e in arg.env.split("+") if e]  # [] = every env in the logs
  c.roles = dict(planner=arg.planner, actor=arg.actor)  # "" = embedded tiny random model
  c.model = model_block()  # preset / dtype of a from-scratch role; roles give the checkpoints
  c.start_fresh = False  # True: move existing checkpoints aside, train from step 0
  c.curate = dict(consistency_filtering=arg.filtering, reconciliation_supervision=arg.sup,
                  reconciliation_replay=arg.replay, success_only=True)
  c.baseline = dict(rows=arg.rows, match=arg.match)
  c.reference_epochs = 3  # paper Table 7: three epochs of the reference, token-matched
  c.train = dict(batch=2 if arg.debug else 8, max_len=512 if arg.debug else 4096, lr=1e-5,
                 max_steps=2 if arg.debug else arg.max_steps, log_every=1, ckpt_every=100,
                 accum_steps=1)   # micro-batches per update (scale=paper: one row per device)
  c.mesh = dict(data=1, fsdp=1)   # --config.mesh.fsdp=N shards each role (experiments/conpact/train)
  # `--plan`: one SFT step of a role, `batch` rows of up to `max_len` tokens
  c.plan = plan_block(trainer="sft", rows=c.train.get_ref("batch"),
                      seq_len=c.train.get_ref("max_len"))
  if paper_scale.check_scale(arg.scale):   # one Qwen3-8B role, batch 8 x 4,096 (the plan)
    paper_scale.apply(c, "conpact")
    c.train.accum_steps = c.plan.get_ref("rows") // c.plan.get_ref("micro_rows")
  return c
