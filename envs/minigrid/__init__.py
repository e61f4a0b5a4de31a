"""JAX-native MiniGrid core and the BabyAI GoTo / BlockedUnlockPickup tasks.

Modules: `constants` (Farama's encodings), `core` (state, the seven actions, the egocentric view),
`rooms` (room-grid level-building blocks), `tasks` (the six task generators and missions),
`env` (the gymnax environment and factories), `convert` (`from_minigrid`), `text` (text view,
admissible actions, state facts, the host-loop text env), `splits` (evaluation instances and
budgets).
"""
