"""Generator-based agents on the `lib.hostloop.agent.Agent` protocol, and what all ConPAct agents
share.

An agent's policy is written as one generator, `episode()`, that yields `ModelRequest`s (and gets
the reply text back from the yield) and `Act`s (after which `self.frames[-1]` is the new
observation). `GeneratorAgent` turns that into reset/next/consume/observe for the host loop, so
multi-call protocols (plan, act, check, discuss, refine) read top to bottom. Budgets are the host
loop's job: the generator loops forever and the loop ends the episode.

Each agent records, per assertion check, both roles' parsed assertions, the ground truth from
`info["state_facts"]`, the comparator's conflicts and any discussion; two-role agents also keep a
plan trace (the sub-goal each action was taken under, for sub-goal adherence). `summary()` returns
both for the results row (metrics.py and attribution.py read them back).
"""
import dataclasses
from typing import Generator

from agents.conpact import parse, prompts, schemas
from agents.conpact.textenv import Task
from lib.backends.protocol import Completion, SamplingParams
from lib.hostloop.agent import Act, ModelRequest

INJECT = ("none", "actor", "planner", "both")


@dataclasses.dataclass(frozen=True)
class AgentConfig:
  """Settings shared by the agents (each uses the ones that apply to it)."""
  assertions: bool = False  # prompt roles for <state> assertions
  inject: str = "none"  # which roles see the true state facts (none/actor/planner/both)
  actor_window: int = 3  # recent frames the actor sees (paper: 3, current included)
  planner_starts: int = 2  # previous sub-goal-start frames the planner sees besides the current
  max_subgoal_steps: int = 6  # re-plan after this many actions on one sub-goal
  # ConPAct-I (paper Table 18 switches)
  correction_trigger: bool = True
  conflict_feedback: bool = True
  planner_participation: bool = True
  max_rounds: int = 1  # discussion rounds per detected conflict
  # Self-Refine / resampling
  refine_rounds: int = 1
  samples: int = 3
  actor_max_tokens: int = 256
  planner_max_tokens: int = 256
  temperature: float = 0.0  # per-call seeds come from the host loop, so rollouts differ when > 0

  def __post_init__(self):
    if self.inject not in INJECT:
      raise ValueError(f"inject must be one of {INJECT}, got {self.inject!r}")
    if self.actor_window < 1 or self.planner_starts < 0 or self.max_subgoal_steps < 1:
      raise ValueError("windows and max_subgoal_steps must be positive")
    if self.max_rounds < 1 or self.samples < 1 or self.refine_rounds < 1:
      raise ValueError("max_rounds, samples and refine_rounds must be >= 1")


class GeneratorAgent:
  """Adapts `episode()` (a generator) to the host-loop protocol."""

  def __init__(self, task: Task, config: AgentConfig = AgentConfig()):
    self.task = task
    self.config = config
    self.schema = schemas.get(task.env)

  # ---- protocol ------------------------------------------------------------------------------
  def reset(self, obs, info) -> None:
    self.frames, self.infos = [obs], [info]
    self.records: list[dict] = []
    self.plan_trace: list[dict] = []  # two-role agents: one entry per action (see plan_act.py)
    self.counts = {"parse_failures": 0, "assertions_missing": 0, "actions": 0}
    self._reply: str | None = None
    self._gen: Generator = self.episode()
    self._started = False
    self.n_requests = 0  # index of the next request = its position among the episode's calls

  def next(self):
    if not self._started:
      self._started = True
      return next(self._gen)
    reply, self._reply = self._reply, None
    return self._gen.send(reply)

  def consume(self, completion: Completion) -> None:
    self._reply = completion.text

  def observe(self, obs, reward, terminated, truncated, info) -> None:
    del reward, terminated, truncated
    self.frames.append(obs)
    self.infos.append(info)

  def summary(self) -> dict:
    return {"records": self.records, "plan": self.plan_trace, **self.counts}

  def episode(self):
    raise NotImplementedError

  # ---- helpers -------------------------------------------------------------------------------
  def truth(self) -> dict | None:
    facts = (self.infos[-1] or {}).get("state_facts")
    return None if facts is None else self.schema.truth(facts)

  def sees_truth(self, role: str) -> bool:
    return self.config.inject in (role, "both")

  def extras(self, role: str, agreed: dict | None = None) -> list[str]:
    out = []
    if self.sees_truth(role) and self.truth() is not None:
      out.append(prompts.verified_block(self.truth()))
    if agreed:
      out.append(prompts.agreed_block(agreed))
    return out

  def request(self, system: str, user: str, tag: str, history: list | None = None) -> ModelRequest:
    role = "planner" if tag.startswith("planner") else "actor"
    max_tokens = self.config.planner_max_tokens if role == "planner" else self.config.actor_max_tokens
    msgs = [{"role": "system", "content": system}, {"role": "user", "content": user}]
    self.last_call = self.n_requests
    self.n_requests += 1
    params = SamplingParams(max_tokens=max_tokens, temperature=self.config.temperature)
    return ModelRequest(msgs + list(history or []), params, tag=tag)

  def assertion(self, text: str) -> parse.Assertion:
    a = parse.parse_assertion(text, self.schema)
    if not a.found:
      self.counts["assertions_missing"] += 1
    return a

  def action(self, text: str) -> tuple[str, bool]:
    """(action name, parsed?) -- the task's fallback action when the reply names none."""
    name = parse.parse_action(text, self.task.action_names)
    if name is None:
      self.counts["parse_failures"] += 1
      return self.task.fallback, False
    return name, True

  def act(self, name: str, tag: str = "actor") -> Act:
    self.counts["actions"] += 1
    return Act(self.task.to_env_action(name), tag=f"{tag}:{name}")

  def record(self, kind: str, **fields) -> dict:
    truth = self.truth()
    rec = {"kind": kind, "t": len(self.frames) - 1,
           "truth": None if truth is None else {k: schemas.to_json(v) for k, v in truth.items()},
           **fields}
    self.records.append(rec)
    return rec
