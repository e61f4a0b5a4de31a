"""Benchmark: batched host loop vs one episode at a time (random Flax Qwen3, GuessEnv, greedy).

python launch.py --config=configs/bench/host_loop.py --workdir=runs/host_loop_bench
python launch.py --config=configs/bench/host_loop.py:preset=qwen3-20m --workdir=runs/hlb_20m
python launch.py --config=configs/bench/host_loop.py:debug=True --workdir=runs/host_loop_bench_dbg
# the envs in worker processes (or --config.host.executor=ray):
python launch.py --config=configs/bench/host_loop.py:debug=True --workdir=runs/hlb_procs \
    --config.host.executor=processes --config.host.workers=2
# the same episodes against a served model (start configs/serve.py first):
python launch.py --config=configs/bench/host_loop.py --workdir=runs/hlb_http \
    --config.backend.kind=openai_http --config.backend.openai_http.base_url=http://127.0.0.1:8000/v1
"""
import ml_collections

from configs import common
from lib.run.config_blocks import backends_config, host_block


def get_config(arg=None):
  arg = common.parse_arg(arg, debug=False, episodes=32, preset="qwen3-tiny", rounds=5)
  c = ml_collections.ConfigDict()
  c.experiment = "bench/host_loop"
  c.seed = 0
  c.episodes = 8 if arg.debug else arg.episodes
  c.rounds = 2 if arg.debug else arg.rounds   # interleaved timed rounds (lib/bench/rounds.py)
  c.env_n = 64
  c.action_budget = 4
  c.call_budget = 4
  c.max_tokens = 8
  # where the envs run: executor inline | processes | ray (host.workers caps the live episodes of
  # the batched mode too)
  c.host = host_block()
  # Random weights of a lib.models preset (qwen3-tiny, or qwen3-20m: the sampler benchmark's
  # size), vocabulary resized to the tokenizer trained here.
  # Other backends: --config.backend.kind=openai_http --config.backend.openai_http.base_url=...
  c.backend = backends_config(
      "flax", flax=dict(model=dict(preset=arg.preset), max_batch=64))
  return c
