"""Environments: JAX-native grid worlds (Sokoban, MiniGrid/BabyAI), Crafter text, host-loop envs."""
from envs.registry import make, register, registered_ids  # noqa: F401
