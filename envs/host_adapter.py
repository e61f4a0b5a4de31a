"""A JAX env behind the host-loop API, optionally shown as text to a language agent.

Host-loop envs (CONTRIBUTING.md) follow `reset(seed) -> (obs, info)` and `step(action) -> (obs,
reward, terminated, truncated, info)`. `JaxEnvAdapter` runs one instance of a gymnax-style env that
way (one unbatched state on the host, jitted reset/step) and exposes the current `state` to agents
and comparators that read ground truth. Every user of a JAX env in a host loop goes through it: the
ConPAct agents (agents/conpact/textenv.py), the `lib.backends` host-loop tests and benchmarks.

Without a view the observation is the env's own array observation and `info` its step info. With a
`TextView` (one per JAX env family, in its `text.py`: `envs.sokoban.text.VIEW`,
`envs.minigrid.text.VIEW`) the observation is the view's text and `info` is
`{"state_facts": ..., "success": ...}`. Host-only families (Crafter, Procgen, the text games in
`envs/text/`) are host-loop envs natively and need no adapter.
"""
import dataclasses
from typing import Any, Callable

import jax


@dataclasses.dataclass(frozen=True)
class TextView:
  """How one JAX env family is shown to a language agent; every function reads one unbatched
  state on the host.

  Attributes:
    action_names: the action names agents see, index = action id.
    action_id: an action name (as an agent writes it) -> action id; raises ValueError.
    render_text: state -> the observation text.
    state_facts: state -> JSON-able ground truth that assertions about the state are checked
      against.
    success: (state facts, the env's step info; {} at reset) -> whether the task is solved.
  """
  action_names: tuple[str, ...]
  action_id: Callable[[str], int]
  render_text: Callable[[Any], str]
  state_facts: Callable[[Any], dict]
  success: Callable[[dict, dict], bool]


class JaxEnvAdapter:
  """One instance of a gymnax-style env behind the host-loop `reset(seed)`/`step(action)` API.

  Uses `step_env` (no auto-reset: the loop ends the episode itself) and the env's own truncation
  rule. Jitted functions are cached per env object, so many adapters over one env compile once.

  Args:
    env: a gymnax-style env (`envs.base.Environment`).
    params: env params; None uses `env.default_params`.
    view: the family's `TextView`; None returns the env's own observations and step info.
    reset_state: seed -> start state, for envs whose instances are fixed levels (Sokoban: row
      `seed` of the bank); None draws the start state with `env.reset_env` from PRNGKey(seed).
  """

  _JIT_CACHE: dict[int, tuple] = {}

  def __init__(self, env, params=None, view: TextView | None = None,
               reset_state: Callable[[int], Any] | None = None):
    self.env = env
    self.params = env.default_params if params is None else params
    self.view = view
    self.reset_state = reset_state
    cached = self._JIT_CACHE.get(id(env))
    if cached is None or cached[0] is not env:
      cached = (env, jax.jit(env.reset_env), jax.jit(env.step_env), jax.jit(env.is_truncated))
      self._JIT_CACHE[id(env)] = cached
    _, self._reset, self._step, self._truncated = cached
    self.state = None
    self._key = None
    self._t = 0

  def reset(self, seed: int):
    """Starts an episode; returns (observation or text, info)."""
    key = jax.random.PRNGKey(seed)
    self._key, sub = jax.random.split(key)
    self._t = 0
    if self.reset_state is None:
      obs, self.state = self._reset(sub, self.params)
    else:
      self.state = self.reset_state(int(seed))
      obs = self.env.get_obs(self.state, self.params)
    if self.view is None:
      return obs, {}
    return self.view.render_text(self.state), self._text_info({})

  def step(self, action):
    """One action id; returns (observation or text, reward, terminated, truncated, info)."""
    self._t += 1
    sub = jax.random.fold_in(self._key, self._t)
    obs, self.state, reward, terminated, info = self._step(sub, self.state, action, self.params)
    truncated = bool(self._truncated(self.state, self.params)) and not bool(terminated)
    if self.view is None:
      return obs, float(reward), bool(terminated), truncated, dict(info)
    return (self.view.render_text(self.state), float(reward), bool(terminated), truncated,
            self._text_info(dict(info)))

  def _text_info(self, env_info: dict) -> dict:
    facts = self.view.state_facts(self.state)
    return {"state_facts": facts, "success": self.view.success(facts, env_info)}
