"""Benchmark: the host loop's env executors (inline, worker processes, Ray actors), episodes/s.

python launch.py --config=configs/bench/host_executors.py --workdir=runs/bench_host_executors
python launch.py --config=configs/bench/host_executors.py:debug=True --workdir=runs/bhe_debug
# one section alone (latency, textworld, scienceworld):
python launch.py --config=configs/bench/host_executors.py --workdir=runs/bhe_latency --config.sections="('latency',)"
# the Ray sides on a running Ray cluster instead of a local Ray (docs/scaling.md):
python launch.py --config=configs/bench/host_executors.py --workdir=runs/bhe_cluster --config.ray_address=auto
"""
import ml_collections

from configs import common


def get_config(arg=None):
  arg = common.parse_arg(arg, debug=False, rounds=5)
  d = arg.debug
  c = ml_collections.ConfigDict()
  c.experiment = "bench/host_executors"
  c.seed = 0
  c.rounds = 2 if d else arg.rounds   # interleaved timed rounds (lib/bench/rounds.py)
  # A tuple, so --config.sections="('latency',)" works; debug: no ScienceWorld (a JVM per worker).
  c.sections = ("latency", "textworld") if d else ("latency", "textworld", "scienceworld")
  # The executors of a section, "inline" or "<kind>:<workers>", run in this order in every round;
  # "inline" is the baseline every ratio divides by. The Ray sides share one Ray: "" starts a
  # local one, "auto" / "ray://head:10001" joins a cluster.
  c.ray_address = ""
  # The fixed scripted backend: the same replies on every executor (agents/wm/scripted.py for the
  # text games, envs/toy/latency_env.py:EchoPolicy for the latency env).
  c.backend = dict(kind="scripted", seed=0, p_garble=0.1)
  # Sleep-latency env: no CPU, so workers scale past the core count. Ray actors reserve almost no
  # CPU (they sleep), so 32 of them fit a 2-core machine.
  c.latency = dict(
      step_latency_s=0.01 if d else 0.02, episode_steps=4 if d else 8,
      episodes=8 if d else 64, max_live=4 if d else 32, ray_num_cpus=0.01,
      executors=(("inline", "processes:4", "ray:4") if d else
                 ("inline", "processes:8", "processes:32", "ray:8", "ray:32")))
  # The text games as the world-model audit plays them (configs/wm/eval.py): the audit agent, the
  # scripted stand-in, TextWorld in the list regime, ScienceWorld in the no-list regime. Episodes
  # = levels x samples, each `max_steps` long unless solved; a worker reuses its env (pooled).
  text_executors = (("inline", "processes:2", "ray:2") if d else
                    ("inline", "processes:1", "processes:2", "ray:1", "ray:2", "ray:8"))
  c.textworld = dict(
      enabled=True, eval_seeds=[101, 102] if d else list(range(101, 109)), train_seeds=[],
      games_dir="",  # "" = <workdir>/textworld_games (generated once, reused)
      isolate=True, world_size=3, nb_objects=4, quest_length=2, train_settings=[], processes=1,
      regime="list", samples=1 if d else 2, max_steps=4 if d else 10, max_live=2 if d else 8,
      ray_num_cpus=0.25, executors=text_executors)
  c.scienceworld = dict(
      enabled=True, tasks=["find-non-living-thing", "find-plant", "boil", "melt"],
      train_variations=[], eval_variations=[0, 1], per_task=10, regime="no-list",
      samples=2, max_steps=10, max_live=8, ray_num_cpus=0.25, executors=text_executors)
  c.history_window = 5
  c.max_tokens = 512
  c.temperature = 1.0
  return c
