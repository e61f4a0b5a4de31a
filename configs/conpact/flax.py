"""ConPAct CPU demonstration 2 -- a tiny Flax model end to end through the same host loop.

The default model is the embedded qwen3-tiny preset with RANDOM weights and a tokenizer trained here
(lib/backends/flax_backend.py): it exercises batching, prompting, parsing, fallbacks, comparator
checks and metrics on CPU; its success numbers mean nothing about ConPAct. Point `checkpoint` at an
HF-format directory (e.g. an SFT export) to evaluate a real local model.

python launch.py --config=configs/conpact/flax.py --workdir=runs/conpact_flax
python launch.py --config=configs/conpact/flax.py:checkpoint=runs/sft/export,budget=0 --workdir=runs/cf
"""
import ml_collections

from configs import common
from configs.conpact.scripted import PAIRED_VS, conditions
from lib.run.config_blocks import backend_config, host_block


def get_config(arg=None):
  arg = common.parse_arg(arg, debug=False, checkpoint="", budget=4, max_tokens=24)
  c = ml_collections.ConfigDict()
  c.experiment = "conpact/eval"
  c.seed = 0
  c.envs = ["sokoban"]
  c.split = "evaluation"
  c.instances = 2
  c.minigrid_per_task = 1
  c.minigrid_tasks = ["BabyAI-GoToRedBall-v0"]
  c.rollouts = 2
  c.max_live = None
  c.host = host_block()   # where the envs run: executor inline | processes | ray
  c.n_resamples = 200
  c.budget_cap = arg.budget  # A = C cap per rollout (0: paper budgets)
  c.label = ("tiny RANDOM-weight Flax model (mechanics only)" if not arg.checkpoint
             else f"Flax checkpoint {arg.checkpoint}")
  c.backend = backend_config("flax", model=dict(checkpoint=arg.checkpoint), max_batch=16)
  c.actor_backend = {}
  c.scripted = dict(noise={}, abstain=0.0)  # unused by non-scripted backends
  tokens = {"actor_max_tokens": arg.max_tokens, "planner_max_tokens": arg.max_tokens}
  keep = ("react", "assertion", "conpact_i")
  c.conditions = [{**x, "settings": {**x["settings"], **tokens}}
                  for x in conditions(subgoal_steps=2) if x["name"] in keep]
  c.paired_vs = list(PAIRED_VS)
  return c
