"""Benchmark: batched host loop vs one episode at a time (random Flax Qwen3, GuessEnv, greedy).

python launch.py --config=configs/host_loop_bench.py --workdir=runs/host_loop_bench
python launch.py --config=configs/host_loop_bench.py:preset=qwen3-20m --workdir=runs/hlb_20m
python launch.py --config=configs/host_loop_bench.py:debug=True --workdir=runs/host_loop_bench_dbg
"""
import ml_collections

from configs import common
from lib.llm import factory


def get_config(arg=None):
  arg = common.parse_arg(arg, debug=False, episodes=32, preset="qwen3-tiny")
  c = ml_collections.ConfigDict()
  c.experiment = "host_loop_bench"
  c.seed = 0
  c.episodes = 8 if arg.debug else arg.episodes
  c.env_n = 64
  c.action_budget = 4
  c.call_budget = 4
  c.max_tokens = 8
  # Random weights of a lib.models preset (qwen3-tiny, or qwen3-20m: the sampler benchmark's
  # size), vocabulary resized to the tokenizer trained here.
  c.backend = factory.backend_config("flax", preset=arg.preset, max_batch=64)
  return c
