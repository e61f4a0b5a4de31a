"""ConPAct CPU demonstration 1 -- SCRIPTED planner/actor with seeded perception noise.

Sokoban and MiniGrid (BabyAI GoTo tasks) by default; `envs=` picks any of sokoban, minigrid,
procgen (the paper's six games, one env each: procgen-bigfish, ...) and crafter, joined by "+"
(every environment of the paper except OSWorld, which needs screenshots and a VLM). Shows,
mechanically: the comparator recovers labelled injected contradictions (precision/recall vs
labels replayed from the policy), injecting the true state facts lowers mismatch and raises
success (paper Figure 4), the ConPAct-I ablation switches (Table 18 layout), and the inference
baselines (ReAct, Self-Refine, resampling, Plan-Act), with
failure attribution, sub-goal adherence and CC/CW; `demo.png` in the workdir plots success and
initial vs residual D per condition. Scripted numbers are mechanics, not model results.

python launch.py --config=configs/conpact/scripted.py --workdir=runs/conpact_scripted
python launch.py --config=configs/conpact/scripted.py:debug=True --workdir=runs/conpact_scripted_dbg
python launch.py --config=configs/conpact/scripted.py:perception=0.5 --workdir=runs/conpact_p05
# Procgen and Crafter (debug: about half a minute; procgen and crafter are optional deps):
python launch.py --config=configs/conpact/scripted.py:debug=True,envs=procgen+crafter --workdir=runs/conpact_pc_dbg
python launch.py --config=configs/conpact/scripted.py:envs=sokoban+minigrid+procgen+crafter --workdir=runs/conpact_all
# the figures in the README (about 25 min on 2 heavily shared CPU cores):
python launch.py --config=configs/conpact/scripted.py:instances=6,mg_per_task=2 --workdir=runs/conpact_scripted
"""
import ml_collections

from configs import common
from lib.run.config_blocks import backend_config, host_block

ENVS = ("sokoban", "minigrid", "procgen", "crafter")
PROCGEN_GAMES = ("bigfish", "chaser", "coinrun", "jumper", "maze", "miner")  # paper Table 5
DEBUG_NEW_ENV_BUDGET = 12  # a debug run with Procgen/Crafter caps A = C (160 there) of every env
PAIRED_VS = ("plan_act", "assertion")  # reference conditions of the paired differences

ABLATION = [  # (name, correction trigger, conflict feedback, planner participation)
    ("conpact_no_trigger", False, False, False),
    ("conpact_no_feedback", True, False, True),
    ("conpact_actor_only", True, True, False),
    ("conpact_i", True, True, True),
]


def conditions(subgoal_steps: int) -> list[dict]:
  base = {"max_subgoal_steps": subgoal_steps}
  out = [
      {"name": "react", "method": "react", "settings": {}},
      {"name": "self_refine", "method": "self_refine", "settings": {}},
      {"name": "resample", "method": "resample", "settings": {"samples": 3}},
      {"name": "plan_act", "method": "plan_act", "settings": dict(base)},
      {"name": "assertion", "method": "assertion", "settings": dict(base)},
      {"name": "assertion+true_facts", "method": "assertion",
       "settings": {**base, "inject": "both"}},
  ]
  for name, trig, fb, pp in ABLATION:
    out.append({"name": name, "method": "conpact_i",
                "settings": {**base, "correction_trigger": trig, "conflict_feedback": fb,
                             "planner_participation": pp}})
  return out


def env_names(envs: str) -> list[str]:
  """"sokoban+procgen" -> ["sokoban", "procgen-bigfish", ..., "procgen-miner"]; raises on an
  unknown name."""
  out = []
  for name in envs.split("+"):
    if name not in ENVS:
      raise ValueError(f"unknown ConPAct env {name!r} in envs={envs!r}; valid: {'+'.join(ENVS)}")
    out += [f"procgen-{g}" for g in PROCGEN_GAMES] if name == "procgen" else [name]
  return out


def get_config(arg=None):
  arg = common.parse_arg(arg, debug=False, perception=0.3, instances=20, mg_per_task=5, rollouts=8,
                         envs="sokoban+minigrid")
  c = ml_collections.ConfigDict()
  c.experiment = "conpact/eval"
  c.seed = 0
  c.envs = env_names(arg.envs)
  c.split = "evaluation"
  c.instances = 2 if arg.debug else arg.instances  # Sokoban / Crafter / per-Procgen-game instances
  c.minigrid_per_task = 2 if arg.debug else arg.mg_per_task  # paper Table 6: 5 seeds per task
  c.minigrid_tasks = (["BabyAI-GoToRedBall-v0"] if arg.debug else
                      ["BabyAI-GoToRedBall-v0", "BabyAI-GoToObj-v0", "BabyAI-GoToLocal-v0"])
  c.rollouts = 2 if arg.debug else arg.rollouts
  c.max_live = None
  c.host = host_block()   # where the envs run: executor inline | processes | ray
  new_envs = any(e == "crafter" or e.startswith("procgen-") for e in c.envs)
  c.budget_cap = DEBUG_NEW_ENV_BUDGET if arg.debug and new_envs else 0  # 0: the paper's A = C
  c.label = ""  # table label; "" = derived from the backend kind
  c.n_resamples = 200 if arg.debug else 2000
  c.backend = backend_config("scripted", seed=0)
  c.actor_backend = {}
  c.scripted = dict(noise={"perception": arg.perception, "recheck_miss": 0.1}, abstain=0.1)
  c.conditions = conditions(subgoal_steps=3)
  c.paired_vs = list(PAIRED_VS)
  return c
