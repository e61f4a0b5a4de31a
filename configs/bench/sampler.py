"""Sampler benchmark: our jitted KV-cache sampler vs transformers `generate()`, same random weights.

python launch.py --config=configs/bench/sampler.py --workdir=runs/bench_sampler
python launch.py --config=configs/bench/sampler.py:debug=True --workdir=runs/bench_sampler_debug
"""
import ml_collections

from configs import common


def get_config(arg=None):
  arg = common.parse_arg(arg, debug=False, new_tokens=128, rounds=5)
  c = ml_collections.ConfigDict()
  c.experiment = "bench/sampler"
  c.seed = 0
  c.preset = "qwen3-tiny" if arg.debug else "qwen3-20m"   # lib/models/qwen/config.py PRESETS
  c.batches = [1, 2] if arg.debug else [1, 8, 32]
  c.prompt_len = 16
  c.new_tokens = 8 if arg.debug else arg.new_tokens  # greedy, no EOS: every row runs to the end
  c.rounds = 2 if arg.debug else arg.rounds                 # interleaved timed rounds per side
  c.init_std = 0.02                                         # transformers' initializer_range
  # lib/plan/roofline.probe: numpy STREAM arrays (MiB each, 0 = auto: 4x L3, >= 256 MiB), jitted
  # float32 matmul size, best-of repetitions; debug runs probe small sizes (an L3 figure, labelled).
  c.roofline = dict(stream_mib=16 if arg.debug else 0, matmul_n=256 if arg.debug else 2048,
                    reps=2 if arg.debug else 5)
  return c
