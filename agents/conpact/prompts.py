"""Prompts for every role, in our own wording. Reply formats are tagged so `parse.py` can read them.

The first line of each system prompt names the role ("ROLE: planner" / "ROLE: actor"); scripted
policies and transcript readers rely on it. Observation frames are numbered oldest first and the
last one is always the current observation.
"""
import json

from agents.conpact import schemas
from agents.conpact.textenv import Task


def _state_block(schema: schemas.Schema) -> str:
  return ("Before deciding, report what you believe about the current state as one JSON object "
          "inside <state></state> with these fields (write \"unknown\" for any you cannot tell):\n"
          + schema.describe())


def actor_system(task: Task, schema: schemas.Schema, assertions: bool, with_planner: bool) -> str:
  lines = ["ROLE: actor",
           f"You control the agent in a {task.env} task. {task.instruction}",
           "Valid actions: " + ", ".join(task.action_names) + "."]
  if with_planner:
    lines.append("A planner gives you the current sub-goal; choose the single next action that "
                 "advances it. In <status></status> write done if this action completes the "
                 "sub-goal, failed if the sub-goal cannot be reached from here, else ongoing.")
  if assertions:
    lines.append(_state_block(schema))
  fmt = "<think>short reasoning</think>" + ("<state>{...}</state>" if assertions else "") \
      + "<action>one valid action</action>" + ("<status>ongoing</status>" if with_planner else "")
  lines.append("Reply format: " + fmt)
  return "\n".join(lines)


def planner_system(task: Task, schema: schemas.Schema, assertions: bool) -> str:
  lines = ["ROLE: planner",
           f"You plan for an agent in a {task.env} task. {task.instruction}",
           "The actor can take these actions: " + ", ".join(task.action_names) + ".",
           "Set the next sub-goal: one concrete, checkable step of a few actions.",
           "Earlier frames are the observations at which previous sub-goals started."]
  if assertions:
    lines.append(_state_block(schema))
  fmt = "<think>short reasoning</think>" + ("<state>{...}</state>" if assertions else "") \
      + "<subgoal>the next sub-goal</subgoal>"
  lines.append("Reply format: " + fmt)
  return "\n".join(lines)


def frames_text(frames: list[str], label: str = "Observation") -> str:
  n = len(frames)
  parts = [f"{label} {i + 1} of {n}{' (current)' if i == n - 1 else ''}:\n{f}"
           for i, f in enumerate(frames)]
  return "\n\n".join(parts)


def state_json(values: dict) -> str:
  return json.dumps({k: schemas.to_json(v) for k, v in values.items() if v is not None},
                    sort_keys=True)


def verified_block(values: dict) -> str:
  """Injected ground-truth facts (the state-information condition)."""
  return "Verified state (reliable, from the environment):\n" + state_json(values)


def agreed_block(values: dict) -> str:
  return "State agreed with your teammate:\n" + state_json(values)


def actor_user(frames, subgoal: str | None, extra: list[str]) -> str:
  parts = [frames_text(frames)]
  if subgoal is not None:
    parts.append(f"Sub-goal: {subgoal}")
  parts += extra
  parts.append("Your reply:")
  return "\n\n".join(parts)


def planner_user(frames, previous_subgoal: str | None, last_status: str | None,
                 extra: list[str]) -> str:
  parts = [frames_text(frames)]
  if previous_subgoal is not None:
    parts.append(f"Previous sub-goal: {previous_subgoal} (actor reported: {last_status}).")
  parts += extra
  parts.append("Your reply:")
  return "\n\n".join(parts)


def discussion_user(conflicts_text: str | None, role: str) -> str:
  """The follow-up turn in a bounded discussion; `conflicts_text` None = re-check without feedback."""
  other = "actor" if role == "planner" else "planner"
  if conflicts_text is None:
    head = ("CHECK: Your state report may disagree with the " + other + "'s. Look at the "
            "current observation again and report the state once more.")
  else:
    head = ("CONFLICT: Your state report contradicts the " + other + "'s on these fields:\n"
            + conflicts_text + "\nLook at the current observation again. Keep a value you can "
            "verify; correct it otherwise.")
  tail = ("Reply in the same format (<state>, <action>, <status>)." if role == "actor"
          else "Reply in the same format (<state>, <subgoal>).")
  return head + "\n" + tail


def refine_user(draft: str) -> str:
  return ("REFINE: Here is your draft reply:\n" + draft + "\nCheck it against the current "
          "observation for mistakes (wrong positions, blocked moves, invalid actions) and give "
          "your final reply in the same format.")
