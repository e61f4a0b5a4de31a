"""Method name -> agent factory: the rows of the paper's inference tables, as config values.

  react, self_refine, resample      one role (ReAct family)
  plan_act                          planner + actor, no assertions
  assertion                         Plan-Act with both roles asserting (mismatch measured, no fix)
  conpact_i                         ConPAct-I (switches in AgentConfig)
"""
import dataclasses

from agents.conpact.base import AgentConfig
from agents.conpact.conpact_i import ConPActAgent
from agents.conpact.plan_act import PlanActAgent
from agents.conpact.react import ReActAgent
from agents.conpact.resample import ResampleAgent
from agents.conpact.self_refine import SelfRefineAgent
from agents.conpact.textenv import Task

METHODS = {
    "react": (ReActAgent, {}),
    "self_refine": (SelfRefineAgent, {}),
    "resample": (ResampleAgent, {}),
    "plan_act": (PlanActAgent, {"assertions": False}),
    "assertion": (PlanActAgent, {"assertions": True}),
    "conpact_i": (ConPActAgent, {"assertions": True}),
}


def make_agent(method: str, task: Task, **settings):
  """An agent for `method`; `settings` are AgentConfig fields (the method's own choices win)."""
  if method not in METHODS:
    raise KeyError(f"unknown method {method!r}; valid: {', '.join(METHODS)}")
  cls, fixed = METHODS[method]
  unknown = set(settings) - {f.name for f in dataclasses.fields(AgentConfig)}
  if unknown:
    raise KeyError(f"unknown agent settings {sorted(unknown)}")
  return cls(task, AgentConfig(**{**settings, **fixed}))
