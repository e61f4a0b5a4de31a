"""ConPAct-S and ConPAct-R: which logged replies may be SFT targets (paper Table 8).

Both recipes share the consistency rule (`agents.conpact.curate`): targets come from consistent
segments and from successful corrections, and a conflicting reply is context only. They differ in
how a candidate reply is checked:

  conpact_s  "valid responses": the reply is usable -- a planner reply names a sub-goal, an actor
             reply names a valid action, and a reply that was asked to assert holds a parseable
             assertion block with no unreadable field. Agreement between the roles is the only
             evidence about the state; nothing is compared with the environment.
  conpact_r  "validated responses under the same consistency rule; hypothetical errors and recorded
             nonoptimal actions are excluded from targets". On top of S's check:
               hypothetical error   the reply states a fact about the state (an applicable schema
                                    field) that the recorded ground truth of the frame it saw
                                    refutes. The roles can agree on such a belief (CW in Table
                                    23), so the consistency rule alone lets it through.
               non-optimal action   the actor's action is non-optimal on the true state of that
                                    frame (`agents.conpact.optimality`: the BFS solver for
                                    Sokoban, the distance to the target for BabyAI).

The paper gives Table 8's one sentence and no further construction of "hypothetical errors" (the
word occurs nowhere else in the paper). Our reading: a hypothetical error is a state hypothesis the
reply acts on that the logged ground truth contradicts; it is constructed per reply by comparing
every stated applicable field with the truth the agent recorded for that call (`records[*].truth`;
discussion replies use their check's truth). Replies without a recorded truth (a protocol that
asserts nothing) and actions the judge cannot rate (`optimality.non_optimal` is None: Sokoban
boards the solver gives up on or that are lost already, BabyAI targets out of view, other envs)
are not excluded.
"""
import dataclasses
from typing import Sequence

from agents.conpact import optimality, parse, schemas, scripted

REASONS = ("call_error", "unsuccessful_rollout", "no_check", "not_comparable",
           "inconsistent_segment", "unrepaired_discussion", "superseded_round", "unusable",
           "hypothetical_error", "non_optimal_action")


@dataclasses.dataclass(frozen=True)
class Recipe:
  name: str
  exclude_hypothetical_errors: bool
  exclude_non_optimal_actions: bool


RECIPES = {"conpact_s": Recipe("conpact_s", False, False),
           "conpact_r": Recipe("conpact_r", True, True)}


def get(name: str) -> Recipe:
  if name not in RECIPES:
    raise KeyError(f"unknown ConPAct recipe {name!r}; valid: {', '.join(RECIPES)}")
  return RECIPES[name]


def role_of(tag: str) -> str:
  return "planner" if tag.startswith("planner") else "actor"


def hypothetical_error(assertion: parse.Assertion, truth: dict | None) -> bool:
  """A stated applicable field whose value differs from the ground truth (JSON forms)."""
  if truth is None:
    return False
  stated = {k: schemas.to_json(v) for k, v in assertion.values.items() if v is not None}
  return any(truth.get(k) is not None and truth[k] != v for k, v in stated.items())


@dataclasses.dataclass(frozen=True)
class Candidate:
  """A logged reply that could become a target: its call entry, tag, the truth recorded for the
  frame it saw (None: none recorded) and whether it was prompted to assert."""
  call: dict
  tag: str
  truth: dict | None
  asserting: bool


def problem(c: Candidate, env: str, schema: schemas.Schema, action_names: Sequence[str],
            recipe: Recipe) -> str | None:
  """Why `c` may not be a target under `recipe` (a REASONS entry), or None when it may."""
  role, text = role_of(c.tag), c.call["text"]
  action = parse.parse_action(text, action_names) if role == "actor" else None
  if role == "planner" and not parse.extract_tag(text, "subgoal"):
    return "unusable"
  if role == "actor" and action is None:
    return "unusable"
  a = parse.parse_assertion(text, schema)
  if c.asserting and (not a.found or a.invalid):
    return "unusable"
  if recipe.exclude_hypothetical_errors and hypothetical_error(a, c.truth):
    return "hypothetical_error"
  if recipe.exclude_non_optimal_actions and role == "actor":
    frame = scripted.current_frame(c.call["messages"][1]["content"])
    if optimality.non_optimal(env, frame, action):
      return "non_optimal_action"
  return None

