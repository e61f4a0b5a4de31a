"""Evaluation of the world-model audit conditions (pass@k curves, McNemar, loop ratio, PredAcc).

CPU mechanics check (scripted stand-in backends, tiny envs, n=4 per task):
python launch.py --config=configs/wm/eval.py:debug=True --workdir=runs/wm_eval_debug
The same with the envs in two local Ray actors (pip install -e '.[ray]'; or processes):
python launch.py --config=configs/wm/eval.py:debug=True --workdir=runs/wm_eval_ray \
    --config.host.executor=ray --config.host.workers=2
Full scale (64 trajectories per task, temperature 1.0; each condition an OpenAI-compatible server
or a local checkpoint, e.g. Qwen2.5-7B-Instruct and its GRPO/OPSD checkpoints on GPU):
python launch.py --config=configs/wm/eval.py --workdir=runs/wm_eval \
    --config.alfworld.data_dir=$ALFWORLD_DATA --config.heldout=runs/wm_data/heldout.jsonl
"""
import ml_collections

from agents.wm.condition_table import CONDITIONS
from configs import common
from configs.wm import data as wm_data
from lib.run.config_blocks import backend_config, host_block


def get_config(arg=None):
  arg = common.parse_arg(arg, debug=False, samples=64, base_url="http://127.0.0.1:8000/v1")
  c = ml_collections.ConfigDict()
  c.experiment = "wm/eval"
  c.debug = arg.debug
  c.seed = 0
  c.scale_label = "CPU scale, scripted stand-ins" if arg.debug else "full scale"
  c.max_steps = 30
  c.history_window = 5
  c.temperature = 1.0
  c.max_tokens = 512                 # 1,024 for ALFWorld in the audit; set per run if needed
  c.samples = 4 if arg.debug else arg.samples
  c.ks = [1, 2, 4, 8, 16, 32, 64]
  c.n_resamples = 1000 if arg.debug else 10_000
  c.max_live = 2 if arg.debug else 64   # a ScienceWorld episode in flight holds one JVM
  # where the envs run: executor inline | processes | ray (lib/run/config_blocks.py); each worker
  # keeps its own envs (one JVM per ScienceWorld worker) across the episodes it plays
  c.host = host_block()
  # (env, regime) pairs; ScienceWorld has no admissible list in the audit, so no-list only.
  # (env, regime, "train") adds a run on training levels, labelled <regime>@seen (diagnostic).
  c.runs = [("textworld", "list"), ("textworld", "no-list"), ("alfworld", "list"),
            ("alfworld", "no-list"), ("scienceworld", "no-list")]
  c.seen_levels = 0                  # >0: a "train" run plays only the first seen_levels levels
  if arg.debug:
    c.conditions = {"BASE": dict(kind="scripted", seed=0, p_garble=0.3),
                    "GRPO-COIN": dict(kind="scripted", seed=1, p_garble=0.05)}
  else:  # one served model per condition: model name = condition (e.g. vLLM --served-model-name)
    c.conditions = {name: backend_config("openai_http", base_url=arg.base_url, model=name)
                    for name in CONDITIONS}
  c.heldout = ""                     # heldout.jsonl from experiments/wm/data.py
  c.n_heldout = 30 if arg.debug else 1_200
  c.predict_max_tokens = 640
  c.judge = dict(kind="rule") if arg.debug else dict(
      kind="llm", backend=backend_config("openai_http", base_url=arg.base_url, model="judge"))
  data = wm_data.get_config("debug" if arg.debug else None)
  sw = data.scienceworld.to_dict()
  sw["eval_variations"] = [2, 3] if arg.debug else "test"
  c.scienceworld = sw
  c.textworld = data.textworld.to_dict()
  if arg.debug:
    c.textworld.eval_seeds = [101, 102]
  c.alfworld = data.alfworld.to_dict()
  return c
