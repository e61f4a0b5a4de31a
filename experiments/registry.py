"""Explicit experiment registry: `config.experiment` -> module exposing `run(config, workdir)`.

Modules are imported lazily so that launching one experiment does not import every other one's
dependencies. Add one line per experiment; names must be unique (a dict literal cannot hide a
duplicate from review, and `check_unique` guards the programmatic path).
"""
import importlib
from typing import Callable

EXPERIMENTS: dict[str, str] = {
    "smoke": "experiments.smoke",
    "serve": "experiments.serve",
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
