"""Benchmark: the agentic multi-turn rollout loop, batched vs one episode at a time (issue #45).

The rollout phase of configs/agentic/babyai.py (`lib.hostloop.rollouts.collect` over
`group_jobs`: G episodes per BabyAI level, ConPAct's ReAct agent, the `PolicyBackend` sampling at
temperature 1 with per-request keys) timed two ways on the same episodes: every live episode's
reply in one batched sampler call per step, against one episode at a time (max_live = max_batch
= 1). The actor is the study's tiny Qwen3 shape with RANDOM weights on ConPAct's BPE (trained
here on a few expert demonstrations): no SFT, since throughput does not depend on what the
weights say, only on the shapes (a random actor's replies rarely name an action, so its episodes
mostly run to the call budget with the task's fallback action).

python launch.py --config=configs/bench/agentic.py --workdir=runs/bench_agentic
python launch.py --config=configs/bench/agentic.py:debug=True --workdir=runs/bench_agentic_dbg
python launch.py --config=configs/bench/agentic.py:group=4,rounds=5 --workdir=runs/bench_agentic_g4
"""
import ml_collections

from configs import common
from configs.agentic import babyai as study


def get_config(arg=None):
  arg = common.parse_arg(arg, debug=False, rounds=3, group=8, groups_per_task=1)
  d = arg.debug
  s = study.get_config(f"debug={d}")   # the study's tasks, budget, model shape and turn cap
  c = ml_collections.ConfigDict()
  c.experiment = "bench/agentic"
  c.debug = d
  c.seed = 0                     # model init, the backend's sampling root and the loop's seed
  c.rounds = 2 if d else arg.rounds   # interleaved timed rounds (lib/bench/rounds.py)
  c.tasks = list(s.tasks)        # debug: GoToRedBall; else the study's four BabyAI tasks
  # the episodes: groups_per_task SOURCE levels per task (seeds 0, 1, ...), G episodes each
  c.groups_per_task = 2 if d else arg.groups_per_task
  c.group_size = 2 if d else arg.group
  c.budget = 4 if d else s.budget            # A = C per episode (actions and model calls)
  c.turn_tokens = s.agentic.turn_tokens      # tokens per reply (the study's cap)
  c.temperature = s.grpo.temperature         # 1.0: both modes sample, from per-request keys
  # ConPAct's BPE trained on expert ReAct rows of the tasks (the study's tokenizer stage)
  c.data = dict(demos=2 if d else s.data.demos, seed=s.data.seed)
  c.model = s.model              # the study's tiny Qwen3 block, initialised at random here
  # where the envs run (inline by default); host.workers also caps the batched mode's live
  # episodes, as in the study
  c.host = s.host
  return c
