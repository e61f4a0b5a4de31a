"""Explicit experiment registry: `config.experiment` -> module exposing `run(config, workdir)`.

Modules are imported lazily so that launching one experiment does not import every other one's
dependencies. Add one line per experiment; names must be unique (a dict literal cannot hide a
duplicate from review, and `check_unique` guards the programmatic path).
"""
import importlib
from typing import Callable

EXPERIMENTS: dict[str, str] = {
    "bench/train": "experiments.bench.train",
    "train_opsd": "experiments.train_opsd",
    "train_grpo": "experiments.train_grpo",
    "train_sft": "experiments.train_sft",
    "bench/envs": "experiments.bench.envs",
    "bench/minigrid": "experiments.bench.minigrid",
    "smoke": "experiments.smoke",
    "bench/sampler": "experiments.bench.sampler",
    "bench/serve": "experiments.bench.serve",
    "gencoord/eval": "experiments.gencoord.eval",
    "gencoord/bench": "experiments.gencoord.bench",
    "gencoord/data": "experiments.gencoord.data",
    "gencoord/learned": "experiments.gencoord.learned",
    "gencoord/sender_probe": "experiments.gencoord.sender_probe",
    "gencoord/sender_fit": "experiments.gencoord.sender_fit",
    "gencoord/drill_probe": "experiments.gencoord.drill_probe",
    "serve": "experiments.serve",
    "bench/host_loop": "experiments.bench.host_loop",
    "bench/host_executors": "experiments.bench.host_executors",
    "conpact/eval": "experiments.conpact.eval",
    "conpact/train": "experiments.conpact.train",
    "conpact/study": "experiments.conpact.study",
    "conpact/arms": "experiments.conpact.arms",
    "conpact/probe": "experiments.conpact.probe",
    "bench/qwen3_5": "experiments.bench.qwen3_5",
    "wm/data": "experiments.wm.data",
    "wm/eval": "experiments.wm.eval",
    "wm/train": "experiments.wm.train",
    "wm/demo": "experiments.wm.demo",
    "wm/study": "experiments.wm.study",
    "device_smoke": "experiments.device_smoke",
    "agentic/babyai": "experiments.agentic.babyai",
    "bench/agentic": "experiments.bench.agentic",
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
