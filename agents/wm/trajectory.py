"""Episode records for the world-model audit, and scripted/expert trajectory collection.

A `Trajectory` is what every later stage reads: metrics (success, action failure, loop ratio),
world-model samples (task, history, observation, action, next observation) and evaluation rows.
Step t is the pair (observation o_t, action a_t) followed by o_{t+1}; `action is None` marks a step
whose model reply held no parsable action (the env then received the agent's fallback action).

Sources:
  collect(env, policy, seed)         scripted or expert policies, offline
  from_host_loop_row(row)            an episode the LLM host loop (`lib.hostloop.loop`) recorded
"""
import dataclasses
from typing import Callable, Protocol

import numpy as np

PARSE_FAILURE_TAG = "parse_failure"  # Act tag an agent uses for a fallback action


@dataclasses.dataclass
class Step:
  obs: str
  action: str | None        # None: no parsable action in the reply
  next_obs: str
  reward: float = 0.0
  action_failed: bool = False  # the env did not execute it (grammar/precondition failure)
  # The env's admissible actions at `obs` (None when it lists none): the list-regime prompt of
  # this step can then be rebuilt for agent SFT rows.
  admissible: list[str] | None = None

  @property
  def executed(self) -> bool:
    return self.action is not None and not self.action_failed


@dataclasses.dataclass
class Trajectory:
  env: str
  task_id: str              # pass@k cluster: env/task/variation
  task: str                 # the goal in words
  steps: list[Step]
  success: bool
  score: float
  env_error: str | None = None
  policy: str = ""

  @property
  def observations(self) -> list[str]:
    """o_0 .. o_T (T = number of steps)."""
    if not self.steps:
      return []
    return [s.obs for s in self.steps] + [self.steps[-1].next_obs]

  @property
  def actions(self) -> list[str | None]:
    return [s.action for s in self.steps]

  def to_json(self) -> dict:
    return dataclasses.asdict(self)

  @classmethod
  def from_json(cls, d: dict) -> "Trajectory":
    return cls(**{**d, "steps": [Step(**s) for s in d["steps"]]})


class Policy(Protocol):
  name: str

  def reset(self, env, obs: str, info: dict) -> None:
    ...

  def act(self, obs: str, info: dict) -> str:
    ...


class ExpertPolicy:
  """Replays the env's own solution: ScienceWorld gold path or TextWorld/ALFWorld plan."""

  name = "expert"

  def reset(self, env, obs, info):
    del obs, info
    get = getattr(env, "gold_actions", None) or getattr(env, "expert_actions", None)
    if get is None:
      raise TypeError(f"{type(env).__name__} has no gold_actions()/expert_actions()")
    self.plan, self.t = list(get()), 0

  def act(self, obs, info):
    del obs, info
    action = self.plan[self.t] if self.t < len(self.plan) else "look"
    self.t += 1
    return action


class NoisyExpertPolicy(ExpertPolicy):
  """The expert plan with a seeded chance `p` per step of a random other action instead.

  Deviations give world-model data the failed and off-plan transitions a pure expert never makes.
  The random action is drawn from `info["admissible_actions"]` when the env lists them, else from
  `fallback_actions`. After a deviation the expert resumes its plan where it left off (it may then
  fail, which is realistic data too).
  """

  name = "noisy_expert"

  def __init__(self, p: float, rng: np.random.Generator,
               fallback_actions: tuple[str, ...] = ("look around", "inventory", "wait1")):
    if not 0.0 <= p <= 1.0:
      raise ValueError(f"p must be in [0, 1], got {p}")
    self.p, self.rng, self.fallback_actions = p, rng, fallback_actions

  def act(self, obs, info):
    if self.rng.random() < self.p:
      pool = info.get("admissible_actions") or list(self.fallback_actions)
      return str(pool[int(self.rng.integers(len(pool)))])
    return super().act(obs, info)


class RandomPolicy:
  """Uniform over admissible actions (or `fallback_actions`), seeded."""

  name = "random"

  def __init__(self, rng: np.random.Generator,
               fallback_actions: tuple[str, ...] = ("look around", "inventory", "wait1")):
    self.rng, self.fallback_actions = rng, fallback_actions

  def reset(self, env, obs, info):
    del env, obs, info

  def act(self, obs, info):
    pool = info.get("admissible_actions") or list(self.fallback_actions)
    return str(pool[int(self.rng.integers(len(pool)))])


def collect(env, policy: Policy, seed: int, max_steps: int | None = None) -> Trajectory:
  """Plays one episode of `env` (host-loop text env) with `policy`; never raises for env errors."""
  obs, info = env.reset(seed)
  policy.reset(env, obs, info)
  task = info.get("task", "")
  steps, last = [], info
  limit = max_steps or getattr(env, "max_steps", 30)
  for _ in range(limit):
    before = last.get("admissible_actions")
    action = policy.act(obs, last)
    next_obs, reward, terminated, truncated, last = env.step(action)
    if last.get("env_error"):
      break  # the simulator failed mid-step: there is no true next observation to record
    steps.append(Step(obs, action, next_obs, float(reward), bool(last.get("action_failed")),
                      admissible=list(before) if before else None))
    obs = next_obs
    if terminated or truncated:
      break
  return Trajectory(env=env.spec.env, task_id=env.spec.task_id, task=task, steps=steps,
                    success=bool(last.get("success")), score=float(last.get("score", 0.0)),
                    env_error=last.get("env_error"), policy=policy.name)


def from_host_loop_row(row: dict, env: str = "") -> Trajectory:
  """Rebuilds a Trajectory from a `lib.hostloop.loop` results row (its transcript).

  Actions the agent tagged `parse_failure` (fallbacks after an unparsable reply) get
  `action=None`; the env's `action_failed`/`env_error`/`score`/`task` come from the step infos.
  """
  transcript = row["transcript"]
  events = [e for e in transcript if e["type"] in ("reset", "action")]
  if not events or events[0]["type"] != "reset":
    raise ValueError("transcript does not start with a reset")
  obs = events[0].get("obs", "")
  steps, info = [], {}
  for e in events[1:]:
    info = e.get("info", {})
    if info.get("env_error"):
      break
    action = None if e.get("tag") == PARSE_FAILURE_TAG else e["action"]
    steps.append(Step(obs, action, e.get("obs", ""), float(e.get("reward", 0.0)),
                      bool(info.get("action_failed")) or action is None))
    obs = e.get("obs", "")
  return Trajectory(env=env or str(info.get("task_id", "")).split("/")[0],
                    task_id=str(row.get("task_id", info.get("task_id", ""))),
                    task=str(info.get("task", "")), steps=steps,
                    success=bool(row.get("success")), score=float(info.get("score", 0.0)),
                    env_error=info.get("env_error"), policy=str(row.get("condition", "")))


PolicyFactory = Callable[[int], Policy]
