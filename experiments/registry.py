"""Explicit experiment registry: `config.experiment` -> module exposing `run(config, workdir)`.

Modules are imported lazily so that launching one experiment does not import every other one's
dependencies. Add one line per experiment; names must be unique (a dict literal cannot hide a
duplicate from review, and `check_unique` guards the programmatic path).
"""
import importlib
from typing import Callable

EXPERIMENTS: dict[str, str] = {
    "bench_train": "experiments.bench_train",
    "train_opsd": "experiments.train_opsd",
    "train_grpo": "experiments.train_grpo",
    "train_sft": "experiments.train_sft",
    "bench_envs": "experiments.bench_envs",
    "bench_minigrid": "experiments.bench_minigrid",
    "smoke": "experiments.smoke",
    "bench_sampler": "experiments.bench_sampler",
    "gencoord_eval": "experiments.gencoord_eval",
    "gencoord_bench": "experiments.gencoord_bench",
    "gencoord_data": "experiments.gencoord_data",
    "gencoord_learned": "experiments.gencoord_learned",
    "quickstart": "experiments.quickstart",
    "serve": "experiments.serve",
    "host_loop_bench": "experiments.host_loop_bench",
    "conpact_eval": "experiments.conpact_eval",
    "conpact_train": "experiments.conpact_train",
    "bench_qwen3_5": "experiments.bench_qwen3_5",
    "wm_data": "experiments.wm_data",
    "wm_eval": "experiments.wm_eval",
    "wm_train": "experiments.wm_train",
    "wm_demo": "experiments.wm_demo",
}


def names() -> list[str]:
  return sorted(EXPERIMENTS)


def get(name: str) -> Callable:
  """Returns the `run(config, workdir)` function registered under `name`."""
  if name not in EXPERIMENTS:
    raise KeyError(f"unknown experiment {name!r}; valid: {', '.join(names())}")
  module = importlib.import_module(EXPERIMENTS[name])
  return module.run


def register(name: str, module_path: str) -> None:
  """Adds an entry at run time (plugins, tests); an existing name raises."""
  if name in EXPERIMENTS:
    raise ValueError(f"experiment {name!r} is already registered ({EXPERIMENTS[name]})")
  EXPERIMENTS[name] = module_path
