"""GenCoord closed loop on the live Minecraft backend (flying-squid + Mineflayer on 127.0.0.1).

A few held-out clusters by default, rule backends, with per-operation latency and per-episode
time in summary.md (beside the paper's 22.6 s per episode). `world=sim` runs the same episodes in
the simulator, so the two summaries can be compared verdict by verdict; `base=<config>` runs any
other GenCoord eval config (e.g. gencoord/request, gencoord/feedback) live instead.
Needs Node.js >= 18; `npm ci` runs in envs/minecraft/live on first use.

python launch.py --config=configs/gencoord/live.py --workdir=runs/gencoord_live
python launch.py --config=configs/gencoord/live.py:clusters=0,speed=4.0,conditions=rule_minimal_request+same_template_alternative --workdir=runs/live_all
python launch.py --config=configs/gencoord/live.py:world=sim,clusters=0,conditions=rule_minimal_request+same_template_alternative --workdir=runs/sim_all
python launch.py --config=configs/gencoord/live.py:base=gencoord/request --workdir=runs/live_req
"""
import importlib

import ml_collections

from configs import common


def get_config(arg=None):
  arg = common.parse_arg(arg, base="", clusters=4, speed=1.0, world="live", conditions="",
                         debug=False)
  if arg.base:
    c = importlib.import_module("configs." + arg.base.replace("/", ".")).get_config("debug=True" if arg.debug
                                                                   else None)
    c.title = f"{c.title} [{arg.world}]"
  else:
    c = ml_collections.ConfigDict()
    c.experiment = "gencoord/eval"
    c.title = f"GenCoord held-out suite, {arg.world} world"
    c.seed = 0
    c.protocol = "forward"
    c.suite = "heldout"
    c.train_suite = "train"
    c.batch = 256
    c.conditions = [
        dict(name="rule_minimal_request", backend="rule_minimal_request", condition="true"),
        dict(name="program_reference", backend="program", condition="true"),
        dict(name="same_template_alternative", backend="program", condition="alternative"),
    ]
    c.reference = "rule_minimal_request"
    c.paper = dict(rule_minimal_request=100.0, program_reference=100.0)
    c.n_resamples = 1000
    c.bootstrap_seed = 8901
    c.paired_seed = 8911
  if arg.conditions:                                  # a+b: keep only these conditions
    keep = arg.conditions.split("+")
    unknown = set(keep) - {d["name"] for d in c.conditions}
    if unknown:
      raise common.ConfigArgError(f"unknown conditions {sorted(unknown)}")
    c.conditions = [d for d in c.conditions if d["name"] in keep]
    if c.reference not in keep:
      c.reference = keep[0]
  c.max_clusters = 2 if arg.debug else arg.clusters   # 0 = the whole suite
  c.world = arg.world                                 # "sim" | "live"
  c.debug = arg.debug
  c.live = dict(speed=arg.speed, startup_timeout_s=60.0, op_timeout_s=30.0)
  return c
