"""The tasks of the ConPAct MiniGrid/BabyAI split and their per-rollout limits (paper Table 6).

Standard library only, so a config file lists the tasks without importing JAX; the levels of the
split are envs/minigrid/splits.py.
"""
# task id -> common action and model-call limit A = C per rollout.
LIMITS = {
    "BabyAI-BlockedUnlockPickup-v0": 136,
    "BabyAI-GoTo-v0": 200,
    "BabyAI-GoToDoor-v0": 84,
    "BabyAI-GoToLocal-v0": 60,
    "BabyAI-GoToObj-v0": 60,
    "BabyAI-GoToRedBall-v0": 60,
}
