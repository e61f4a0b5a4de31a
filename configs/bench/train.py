"""Benchmark: SFT and GRPO update throughput of lib/sft/step.py and lib/rl/grpo.py vs
PyTorch/transformers.

python launch.py --config=configs/bench/train.py --workdir=runs/bench_train
python launch.py --config=configs/bench/train.py:debug=True --workdir=runs/bench_train_debug
"""
import ml_collections

from configs import common


def get_config(arg=None):
  arg = common.parse_arg(arg, debug=False)
  c = ml_collections.ConfigDict()
  c.experiment = "bench/train"
  c.seed = 0
  c.bench = dict(preset="qwen3-tiny" if arg.debug else "qwen3-20m", batch=4,
                 seq_len=32 if arg.debug else 128, response_len=16 if arg.debug else 64,
                 lr=1e-5, weight_decay=0.01,
                 rounds=2 if arg.debug else 5,  # interleaved jax/torch rounds (lib/bench/rounds.py)
                 reps=2)                        # updates per side per round
  # lib/plan/roofline.probe: numpy STREAM arrays (MiB each, 0 = auto: 4x L3, >= 256 MiB), jitted
  # float32 matmul size, best-of repetitions; debug runs probe small sizes (an L3 figure, labelled).
  c.roofline = dict(stream_mib=16 if arg.debug else 0, matmul_n=256 if arg.debug else 2048,
                    reps=2 if arg.debug else 5)
  return c
