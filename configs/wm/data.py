"""World-model data from offline expert / noisy-expert trajectories (+ ScienceWorld step benchmark).

python launch.py --config=configs/wm/data.py:debug=True --workdir=runs/wm_data_debug
python launch.py --config=configs/wm/data.py --workdir=runs/wm_data \
    --config.alfworld.data_dir=$ALFWORLD_DATA
"""
import ml_collections

from configs import common
from envs.text import scienceworld_env


def get_config(arg=None):
  arg = common.parse_arg(arg, debug=False, noisy_reps=3)
  c = ml_collections.ConfigDict()
  c.experiment = "wm/data"
  c.seed = 0
  c.max_steps = 30 if arg.debug else 100   # expert paths of some ScienceWorld tasks exceed 30
  c.noisy_reps = 1 if arg.debug else arg.noisy_reps
  c.noise = 0.3
  c.history_window = 5
  c.sample_seed = 42                           # the audit samples its 20,000 transitions at 42
  c.n_train = 60 if arg.debug else 20_000
  c.n_heldout = 30 if arg.debug else 1_200
  c.bench_repeats = 2 if arg.debug else 10
  # ScienceWorld train/eval levels follow the simulator's own train/test variation splits over all
  # 30 tasks in full runs; the debug run uses two quick tasks and fixed variation indices.
  quick_tasks = ["find-non-living-thing", "find-plant"]
  c.scienceworld = dict(
      enabled=True,
      tasks=quick_tasks if arg.debug else list(scienceworld_env.TASK_NAMES),
      # variation indices, or a split name of the simulator ("train"/"dev"/"test")
      train_variations=[0, 1] if arg.debug else "train",
      eval_variations=[2] if arg.debug else "test",
      per_task=10)                              # levels per task when a split is named
  c.textworld = dict(enabled=True, train_seeds=[1, 2] if arg.debug else list(range(1, 41)),
                     eval_seeds=[101] if arg.debug else list(range(101, 121)),
                     games_dir="",  # "" = <workdir>/textworld_games (generated once, reused)
                     isolate=True,  # play in a child process (jericho can abort its process)
                     # difficulty knobs (tw-make custom): rooms, objects, walkthrough length
                     world_size=3, nb_objects=4, quest_length=2,
                     train_settings=[],  # [(rooms, objects, quest)]: train at several settings
                     processes=1)        # game-generation processes (games cached on disk)
  # data_dir "" builds a tiny game in ALFWorld's format (labelled as such in the summary)
  c.alfworld = dict(enabled=True, data_dir="", eval_split="valid_seen", isolate=True)
  return c
