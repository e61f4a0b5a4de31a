"""BabyAI tasks as gymnax environments: `BabyAIEnv(task_id)` and one factory per env id.

`step_env` = the MiniGrid action (`core.step_world`) followed by the BabyAI verifier of
`RoomGridLevel.step`: GoTo succeeds when, after the step, the agent faces a cell of the
verifier's target set (the matching objects' positions at reset, refreshed after every `drop`
action, as Farama's `update_objs_poss`); Pickup succeeds on a pickup action that takes a
matching object while empty-handed. Success terminates with reward 1 - 0.9 * t / max_steps;
`truncated` (gymnax `is_truncated`) is t >= max_steps, both can hold on the same step.

Observation: Farama's `gen_obs()['image']`, uint8 [7, 7, 3] indexed [vx, vy].
Actions: 0 left, 1 right, 2 forward, 3 pickup, 4 drop, 5 toggle, 6 done.
"""
from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from envs import base
from envs.minigrid import constants as C
from envs.minigrid import core
from envs.minigrid import tasks


@struct.dataclass
class EnvParams:
  max_steps_in_episode: int = 64


class BabyAIEnv(base.Environment):
  """One BabyAI task. `generator` (default `tasks.Generator(spec)`) makes the reset levels."""

  def __init__(self, task_id: str, generator=None):
    if task_id not in tasks.TASKS:
      raise KeyError(f"unknown BabyAI task {task_id!r}; valid: {', '.join(tasks.TASKS)}")
    self.spec = tasks.TASKS[task_id]
    self.generator = generator or tasks.Generator(self.spec)

  @property
  def name(self) -> str:
    return self.spec.env_id

  @property
  def default_params(self) -> EnvParams:
    return EnvParams(max_steps_in_episode=self.spec.max_steps)

  @property
  def num_actions(self) -> int:
    return len(C.ACTION_NAMES)

  def action_space(self, params=None):
    return base.Discrete(len(C.ACTION_NAMES))

  def observation_space(self, params=None):
    return base.Box(0, 255, (C.VIEW_SIZE, C.VIEW_SIZE, 3), jnp.uint8)

  def reset_env(self, key: jax.Array, params: EnvParams) -> tuple[jax.Array, core.State]:
    state = self.generator(key)
    return self.get_obs(state), state

  def get_obs(self, state: core.State, params=None, key=None) -> jax.Array:
    return core.observe(state)[0]

  def step_env(self, key: jax.Array, state: core.State, action, params: EnvParams
               ) -> tuple[jax.Array, core.State, jax.Array, jax.Array, dict[str, Any]]:
    del key  # MiniGrid dynamics are deterministic
    action = jnp.asarray(action, jnp.int32)
    new, reached_goal, reached_lava = core.step_world(state, action)
    target_mask = jnp.where(action == C.DROP, tasks.matches(new.grid, new.mission),
                            state.target_mask)
    new = new.replace(target_mask=target_mask)
    fwd = core.front_pos(new)
    goto_done = target_mask[fwd[0], fwd[1]]
    picked = ((action == C.PICKUP) & (state.carrying[0] == C.EMPTY)
              & tasks.matches(new.carrying, new.mission))
    success = jnp.where(new.mission[0] == C.GOTO, goto_done, picked)
    terminated = success | reached_goal | reached_lava
    reward = jnp.where(success | reached_goal,
                       core.success_reward(new.time, params.max_steps_in_episode), 0.0)
    return self.get_obs(new), new, reward, terminated, {"success": success}

  def is_terminated(self, state: core.State, params=None) -> jax.Array:
    """Whether `state` ends the episode, read off the state alone.

    Equivalent to the `terminated` of the step that produced it: a GoTo target cell can only
    be faced after a step (reset never faces an object), a box can only be carried after the
    pickup that succeeds, and the agent only stands on a goal/lava cell right after stepping
    onto it (tests check the equivalence on random episodes)."""
    fwd = core.front_pos(state)
    goto_done = state.target_mask[fwd[0], fwd[1]]
    picked = tasks.matches(state.carrying, state.mission)
    success = jnp.where(state.mission[0] == C.GOTO, goto_done, picked)
    under = state.grid[state.agent_pos[0], state.agent_pos[1], 0]
    return success | (under == C.GOAL) | (under == C.LAVA)


def goto_red_ball(**kwargs) -> BabyAIEnv:
  return BabyAIEnv("BabyAI-GoToRedBall-v0", **kwargs)


def goto_obj(**kwargs) -> BabyAIEnv:
  return BabyAIEnv("BabyAI-GoToObj-v0", **kwargs)


def goto_local(**kwargs) -> BabyAIEnv:
  return BabyAIEnv("BabyAI-GoToLocal-v0", **kwargs)


def goto(**kwargs) -> BabyAIEnv:
  return BabyAIEnv("BabyAI-GoTo-v0", **kwargs)


def goto_door(**kwargs) -> BabyAIEnv:
  return BabyAIEnv("BabyAI-GoToDoor-v0", **kwargs)


def blocked_unlock_pickup(**kwargs) -> BabyAIEnv:
  return BabyAIEnv("BabyAI-BlockedUnlockPickup-v0", **kwargs)
