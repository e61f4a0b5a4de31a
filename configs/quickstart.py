"""Quickstart: train a Direct Short DSL commitment model from scratch on CPU and evaluate it.

python launch.py --config=configs/quickstart.py --workdir=runs/quickstart
python launch.py --config=configs/quickstart.py:debug=True --workdir=runs/quickstart_debug

Writes the 1,920 validated supervision rows, trains a byte-level BPE on them, trains a tiny
Qwen3 (2 layers, d=128) with target-only SFT, then runs the 128 held-out semantic clusters (both
role views) closed loop in the simulated Minecraft workcell with batched greedy decoding.
summary.md: success with cluster-bootstrap CI and Clopper-Pearson, raw validity, calls, tokens,
wire bytes, warm batch-1 TTC p50/p95, batched episodes/s; PNG plots; TensorBoard under tb/.
"""
from configs import common
from configs.gencoord_learned_common import base


def get_config(arg=None):
  arg = common.parse_arg(arg, debug=False, seeds=1)
  c = base(arg)
  c.experiment = "quickstart"
  c.title = "Quickstart: Direct Short DSL, tiny Qwen3 trained from scratch (held-out clusters)"
  c.seed = 0
  c.train.epochs = 1 if arg.debug else 6       # 720 steps (paper: 2 epochs, 240 steps)
  c.train.lr = 5e-3                              # from scratch: higher than the paper's 1e-5
  c.max_rows = 480 if arg.debug else 0
  c.eval.conditions = [dict(name="dsl", recipe="direct_dsl")]
  c.paper = {"dsl": "128/128 (100%)"}
  c.bar = dict(success_pct=95.0)
  return c
