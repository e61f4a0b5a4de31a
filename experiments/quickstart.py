"""The project's first command: GenCoord Direct Short DSL trained and evaluated on CPU.

Same pipeline as `experiments/gencoord/learned.py` (data -> tokenizer -> SFT -> closed loop ->
summary.md + PNGs + TensorBoard) with the quickstart config; summary.md states whether the bar
(>= 95% held-out terminal success, 100% raw validity on solved clusters) was met. It runs that
experiment through the registry, so no experiment imports another's module.
"""
from experiments import registry


def run(config, workdir):
  """Runs the `gencoord/learned` experiment with the quickstart config.

  Args:
    config: the quickstart config (configs/quickstart.py).
    workdir: the run directory.
  Returns:
    The summary dict of `experiments/gencoord/learned.py`.
  """
  return registry.get("gencoord/learned")(config, workdir)
