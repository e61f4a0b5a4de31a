"""ConPAct-S / ConPAct-R training, and the token-matched continued-SFT baseline (paper Tables 7, 8).

Curates the SOURCE-split logs of a conpact/eval run under the recipe (or reads plain
demonstrations for the baseline), trains the planner and the actor separately to a target-token
budget, exports each to <workdir>/<role>/export and writes data_stats.json. The stage itself is
`agents.conpact.learned.recipe_train.train_recipe`, which experiments/conpact/study.py calls too.
"""
from agents.conpact.learned import recipe_train


def run(config, workdir):
  """Trains the recipe of `config` (configs/conpact/train.py); returns its data_stats dict."""
  return recipe_train.train_recipe(config, workdir)
