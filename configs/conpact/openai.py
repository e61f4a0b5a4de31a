"""ConPAct against real models: every role on an OpenAI-compatible endpoint.

The planner uses `base_url`/`model`; the actor the same unless `actor_model` (and optionally
`actor_base_url`) is given, e.g. a large planner with a small actor as in the paper. The API key
is read from the environment variable named by `api_key_env` (never from a config, never logged).

# a model served from this repo (see configs/serve.py), then the evaluation:
python launch.py --config=configs/serve.py:checkpoint=runs/sft/export --workdir=runs/serve &
python launch.py --config=configs/conpact/openai.py:base_url=http://127.0.0.1:8000/v1 \
    --workdir=runs/conpact_served
# a hosted API, planner and actor different models:
OPENAI_API_KEY=... python launch.py --config=configs/conpact/openai.py:base_url=https://api.openai.com/v1,model=gpt-4o,actor_model=gpt-4o-mini,api_key_env=OPENAI_API_KEY,envs=sokoban+minigrid --workdir=runs/conpact_api
"""
import ml_collections

from configs import common
from configs.conpact.scripted import PAIRED_VS, conditions
from lib.run.config_blocks import backend_config, host_block


def get_config(arg=None):
  arg = common.parse_arg(arg, debug=False, base_url="http://127.0.0.1:8000/v1", model="accord",
                         actor_base_url="", actor_model="", api_key_env="", envs="sokoban",
                         instances=200, rollouts=8, max_tokens=512, temperature=0.7)
  c = ml_collections.ConfigDict()
  c.experiment = "conpact/eval"
  c.seed = 0
  c.envs = arg.envs.split("+")
  c.split = "evaluation"
  c.instances = 2 if arg.debug else arg.instances
  c.minigrid_per_task = 1 if arg.debug else 5
  c.minigrid_tasks = ["BabyAI-GoToRedBall-v0", "BabyAI-GoToObj-v0", "BabyAI-GoToLocal-v0",
                      "BabyAI-GoTo-v0", "BabyAI-GoToDoor-v0", "BabyAI-BlockedUnlockPickup-v0"]
  c.rollouts = 2 if arg.debug else arg.rollouts
  c.max_live = 64  # bounds open requests; the client's own max_concurrency bounds HTTP calls
  c.host = host_block()   # where the envs run: executor inline | processes | ray
  c.n_resamples = 200 if arg.debug else 2000
  c.budget_cap = 3 if arg.debug else 0
  c.label = f"planner {arg.model}, actor {arg.actor_model or arg.model}"
  http = dict(base_url=arg.base_url, model=arg.model, api_key_env=arg.api_key_env,
              max_concurrency=16, timeout_s=120.0, max_retries=4)
  c.backend = backend_config("openai_http", **http)
  c.actor_backend = {}
  if arg.actor_model or arg.actor_base_url:
    c.actor_backend = backend_config(
        "openai_http", **{**http, "base_url": arg.actor_base_url or arg.base_url,
                          "model": arg.actor_model or arg.model})
  c.scripted = dict(noise={}, abstain=0.0)
  tokens = {"actor_max_tokens": arg.max_tokens, "planner_max_tokens": arg.max_tokens,
            "temperature": arg.temperature}
  c.conditions = [{**x, "settings": {**x["settings"], **tokens}} for x in conditions(subgoal_steps=3)]
  c.paired_vs = list(PAIRED_VS)
  return c
