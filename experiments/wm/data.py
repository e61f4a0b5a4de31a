"""World-model data from offline trajectories: ScienceWorld, TextWorld and ALFWorld.

Expert and noisy-expert episodes (results.jsonl, resumable), then train.jsonl, train_mis.jsonl,
heldout.jsonl and the behaviour table, and a ScienceWorld stepping benchmark. The stage itself is
`agents.wm.offline_data.collect_data`, which experiments/wm/demo.py and study.py call too.
"""
from agents.wm import offline_data


def run(config, workdir):
  """Writes the world-model data of `config` (configs/wm/data.py) into `workdir`."""
  return offline_data.collect_data(config, workdir)
