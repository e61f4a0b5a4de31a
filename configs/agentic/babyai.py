"""Multi-turn GRPO and GiGPO of a BabyAI actor over the host loop (issue #45; README beside this file).

SFT warm start on ConPAct's expert BabyAI demonstrations (ReAct format), then episode-level GRPO
(omega 0) and GiGPO (omega > 0) from that actor, G episodes per SOURCE level, the policy sampling
with its current weights; greedy success on held-out EVALUATION seeds before and after.

python launch.py --config=configs/agentic/babyai.py:debug=True --workdir=/tmp/agentic_debug
python launch.py --config=configs/agentic/babyai.py --workdir=runs/agentic_babyai     # the study
python launch.py --config=configs/agentic/babyai.py:debug=True --workdir=/tmp/agentic_procs --config.host.executor=processes --config.host.workers=2
python launch.py --config=configs/agentic/babyai.py:debug=True --workdir=/tmp/agentic_ray --config.host.executor=ray
python launch.py --config=configs/agentic/babyai.py:checkpoint=path/to/Qwen3-0.6B --workdir=runs/agentic_q
python launch.py --config=configs/agentic/babyai.py:debug=True,rollout_backend=served --workdir=/tmp/agentic_served
python launch.py --config=configs/agentic/babyai.py:debug=True,rollout_backend=served --workdir=/tmp/agentic_ext --config.served.url=http://127.0.0.1:8000/v1 --config.served.push_dir=/tmp/agentic_ext/push
"""
import ml_collections

from configs import common
from lib.run.config_blocks import host_block, model_block, plan_block

# The BabyAI tasks ConPAct's study evaluates at its CPU-scale action cap of 24
# (configs/conpact/study.py: BlockedUnlockPickup and GoTo need 34 and 54 expert actions).
TASKS = ("BabyAI-GoToDoor-v0", "BabyAI-GoToLocal-v0", "BabyAI-GoToObj-v0", "BabyAI-GoToRedBall-v0")


def get_config(arg=None):
  arg = common.parse_arg(arg, debug=False, checkpoint="", seeds=3, iterations=12, group=8,
                         omega=1.0, eval_per_task=16, budget=24, rollout_backend="policy")
  d = arg.debug
  c = ml_collections.ConfigDict()
  c.experiment = "agentic/babyai"
  c.debug = d
  c.seed = 0
  c.start_fresh = False          # True: move the RL checkpoints aside (stages still skip)
  c.tasks = list(TASKS[-1:] if d else TASKS)
  c.budget = 8 if d else arg.budget          # A = C per episode (actions and model calls)
  # 1. ReAct-format expert rows on SOURCE seeds 0..demos-1 of every task (noise 0)
  c.data = dict(demos=2 if d else 20, seed=202)
  # 2.-3. the SFT actor: a tiny Qwen3 from scratch on ConPAct's BPE, or `checkpoint`
  size = (dict(hidden_size=64, intermediate_size=128, head_dim=16) if d else
          dict(hidden_size=128, intermediate_size=384, head_dim=32))
  c.model = model_block(checkpoint=arg.checkpoint, preset="qwen3-tiny", vocab_size=2048,
                        overrides=dict(num_layers=2, num_heads=4, num_kv_heads=2,
                                       tie_word_embeddings=True, max_position_embeddings=4096,
                                       **size))
  c.sft_seed = 2
  c.sft = dict(steps=80 if d else 400, epochs=0.0 if d else 3.0, batch=8 if d else 16,
               bucket=0 if d else 64, lr=3e-3, warmup_frac=0.03, weight_decay=0.01,
               clip_norm=1.0, max_len=1024, log_every=10, ckpt_every=200)
  # 4. RL: one run per (condition, seed) from the SFT actor; condition -> GiGPO weight omega
  c.conditions = dict(grpo=0.0, gigpo=arg.omega)
  c.seeds = list(range(1 if d else arg.seeds))
  # "policy": the in-process sampler with the trained params; "served": an OpenAI-compatible
  # server returning token ids (Accord's, in process unless served.url), weights pushed per
  # iteration (lib/serve/policy.py: served.push "params" | "disk" | "none")
  c.rollout_backend = arg.rollout_backend
  # the `served` block (lib.serve.policy.ServedConfig; a plain dict: configs import without JAX)
  c.served = dict(url="", model="accord", push="auto", push_dir="", max_concurrency=32,
                  timeout_s=300.0)
  c.host = host_block()          # where the envs run: inline | processes | ray
  c.optim = dict(lr=1e-4, warmup_frac=0.0, schedule="constant", weight_decay=0.0, b1=0.9,
                 b2=0.999, clip_norm=1.0)
  # The audit's GRPO settings (configs/grpo_toy.py); temperature 1 so the sampler's log-probs
  # are the update's old log-probs (token-in/token-out).
  c.grpo = dict(group_size=4 if d else arg.group, temperature=1.0, clip_eps=0.2, dual_clip_c=3.0,
                kl_coef=0.01, entropy_coef=0.001, agg="token-mean", update_epochs=1,
                micro_batch=0 if d else 64)   # rows per accumulation micro-batch
  c.agentic = dict(reward="return", gamma=0.95, turn_tokens=24, minibatch_rows=0,
                   old_logp="sampler")
  c.rl = dict(iterations=2 if d else arg.iterations, groups_per_task=2,
              ckpt_every=5, max_batch=64)
  # 5. greedy evaluation on EVALUATION seeds 1000.. (per task), before and after
  c.eval = dict(per_task=4 if d else arg.eval_per_task, n_resamples=2000 if d else 10000)
  # the largest update: every call of every episode of an iteration (groups x G x budget rows)
  rows = c.rl.groups_per_task * len(c.tasks) * c.grpo.group_size * c.budget
  c.plan = plan_block(trainer="grpo", rows=rows, micro_rows=c.grpo.micro_batch,
                      seq_len=512 + c.agentic.turn_tokens, response_len=c.agentic.turn_tokens,
                      reference=True)
  return c
