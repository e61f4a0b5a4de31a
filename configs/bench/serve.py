"""Server benchmark: the same requests sent one at a time vs by concurrent clients (batched by the
server), same server, same run.

python launch.py --config=configs/bench/serve.py --workdir=runs/bench_serve
python launch.py --config=configs/bench/serve.py:debug=True --workdir=runs/bench_serve_debug
"""
import ml_collections

from configs import common


def get_config(arg=None):
  arg = common.parse_arg(arg, debug=False, requests=64, concurrency=16, max_tokens=32,
                         rounds=5)
  c = ml_collections.ConfigDict()
  c.experiment = "bench/serve"
  c.seed = 0
  c.preset = "qwen3-tiny" if arg.debug else "qwen3-20m"  # random weights, embedded tokenizer
  c.requests = 8 if arg.debug else arg.requests          # per mode
  c.concurrency = 4 if arg.debug else arg.concurrency    # clients in the batched mode
  c.max_tokens = 8 if arg.debug else arg.max_tokens      # greedy; EOS may end a reply earlier
  c.chunk_size = 16
  c.rounds = 2 if arg.debug else arg.rounds              # interleaved timed rounds per mode
  return c
