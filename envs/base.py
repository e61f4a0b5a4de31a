"""The gymnax `Environment` interface and spaces that every JAX env in `envs/` builds on.

JAX envs subclass `Environment` (gymnax's own `gymnax.environments.environment.Environment`) and
describe themselves with gymnax's `Discrete`, `Box` and `Dict` spaces, so gymnax's wrappers
(`LogWrapper`, `FlattenObservationWrapper`, `StickyActionWrapper`, `GymnaxToGymWrapper`, ...)
accept them unchanged: they check `isinstance` against exactly these classes.

The contract (gymnax 1.0): pure key-first `reset(key, params) -> (obs, state)` and
`step(key, state, action, params) -> (obs, state, reward, terminated, truncated, info)` over
`flax.struct` state and params, with an auto-reset on `terminated | truncated`
(`info["final_observation"]` holds the finished episode's last observation). Subclasses implement
`step_env`, `reset_env`, `get_obs`, `is_terminated`, the spaces and `default_params`; truncation
is `state.time >= params.max_steps_in_episode`. For batched training use
`envs.wrappers.VmapAutoReset`, which calls `step_env` and replaces finished episodes from a
pre-drawn pool instead of running `reset_env` on every step.

Importing gymnax also imports its bundled environments (hence `six` among the dependencies, for
its MNIST bandit); that costs about a second once per process.
"""
from gymnax.environments import environment, spaces

Environment = environment.Environment
EnvState = environment.EnvState
EnvParams = environment.EnvParams

Space = spaces.Space
Discrete = spaces.Discrete
Box = spaces.Box
Dict = spaces.Dict

__all__ = ["Environment", "EnvState", "EnvParams", "Space", "Discrete", "Box", "Dict"]
