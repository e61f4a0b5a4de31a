"""Environment registry: an explicit env-id -> factory table.

`make(env_id, **kwargs)` builds an environment. Factories are given as "module:callable" strings
and imported on first use, so that `envs.make("Sokoban-v0")` does not import crafter or minigrid.
Registering an id twice raises.
"""
import importlib
from typing import Any, Callable

_TABLE: dict[str, str] = {}
_RUNTIME: dict[str, Callable[..., Any]] = {}


def _add(env_id: str, target: str) -> None:
  if env_id in _TABLE or env_id in _RUNTIME:
    raise ValueError(f"env id {env_id!r} is registered twice")
  _TABLE[env_id] = target


# Built-in environments, one line each: (env id, "module:factory").
for _env_id, _target in [
    ("MinecraftWorkcell-v0", "envs.minecraft.env:make"),
    ("Sokoban-v0", "envs.sokoban.env:make_sokoban"),
    ("CrafterText-v0", "envs.crafter.text:make_crafter_text"),
    ("Procgen-bigfish-easy-v0", "envs.procgen.text:bigfish"),
    ("Procgen-chaser-easy-v0", "envs.procgen.text:chaser"),
    ("Procgen-coinrun-easy-v0", "envs.procgen.text:coinrun"),
    ("Procgen-jumper-easy-v0", "envs.procgen.text:jumper"),
    ("Procgen-maze-easy-v0", "envs.procgen.text:maze"),
    ("Procgen-miner-easy-v0", "envs.procgen.text:miner"),
    ("BabyAI-GoToRedBall-v0", "envs.minigrid.env:goto_red_ball"),
    ("BabyAI-GoToObj-v0", "envs.minigrid.env:goto_obj"),
    ("BabyAI-GoToLocal-v0", "envs.minigrid.env:goto_local"),
    ("BabyAI-GoTo-v0", "envs.minigrid.env:goto"),
    ("BabyAI-GoToDoor-v0", "envs.minigrid.env:goto_door"),
    ("BabyAI-BlockedUnlockPickup-v0", "envs.minigrid.env:blocked_unlock_pickup"),
    ("ScienceWorld-v0", "envs.text.scienceworld_env:make"),
    ("ALFWorld-v0", "envs.text.alfworld_env:make"),
    ("TextWorld-v0", "envs.text.textworld_env:make"),
]:
  _add(_env_id, _target)


def register(env_id: str, factory: Callable[..., Any]) -> None:
  """Registers a factory at run time; an id that already exists raises ValueError."""
  if env_id in _TABLE or env_id in _RUNTIME:
    raise ValueError(f"env id {env_id!r} is registered twice")
  _RUNTIME[env_id] = factory


def registered_ids() -> list[str]:
  return sorted([*_TABLE, *_RUNTIME])


def make(env_id: str, **kwargs) -> Any:
  """Builds the environment registered under `env_id` with factory keyword arguments."""
  if env_id in _RUNTIME:
    return _RUNTIME[env_id](**kwargs)
  if env_id not in _TABLE:
    raise KeyError(f"unknown env id {env_id!r}; valid: {', '.join(registered_ids())}")
  module_name, attr = _TABLE[env_id].split(":")
  return getattr(importlib.import_module(module_name), attr)(**kwargs)
