"""The project's first command: GenCoord Direct Short DSL trained and evaluated on CPU.

Same pipeline as `experiments/gencoord/learned.py` (data -> tokenizer -> SFT -> closed loop ->
summary.md + PNGs + TensorBoard) with the quickstart config; summary.md states whether the bar
(>= 95% held-out terminal success, 100% raw validity on solved clusters) was met.
"""
from experiments.gencoord import learned as gencoord_learned


def run(config, workdir):
  return gencoord_learned.run(config, workdir)
