"""Environments: JAX-native grid worlds (Sokoban, MiniGrid/BabyAI) with their text views
(`envs.host_adapter`), host-loop envs (Crafter, Procgen, the text games in `envs/text/`,
Minecraft), and one registry (`envs.make`)."""
from envs.registry import make, register, registered_ids  # noqa: F401
