"""Agent and world-model prompts of the audit (fields and tags of its appendix E; our wording).

Agent prompt fields: the environment, the task, how many steps were already taken, the most recent
observation/action history (numbered), the current step number and observation, then either the
admissible actions (*list* regime) or the env's action forms (*no-list* regime), and the output
contract: reasoning inside <think></think>, one action inside <action></action>.

World-model prompt: task, interaction history (observations and actions, no reasoning), current
observation and executed action; reasoning inside <think></think>, the predicted next observation
inside <next_state></next_state>. The OPSD teacher variant appends the privileged next observation.
"""
import re
from typing import Sequence

ENV_TITLES = {
    "alfworld": "the ALFWorld household text environment",
    "scienceworld": "the ScienceWorld text simulator",
    "textworld": "a TextWorld text adventure",
}

# Action forms for the no-list regime, one line each: "form: what it does".
ACTION_FORMS = {
    "alfworld": [
        "go to (receptacle): walk to a receptacle", "open (receptacle): open it",
        "close (receptacle): close it", "take (object) from (receptacle): pick an object up",
        "move (object) to (receptacle): put the held object in or on a receptacle",
        "examine (something): look closely at a receptacle or object",
        "use (object): switch an object such as a lamp on or off",
        "heat (object) with (receptacle): heat with a microwave",
        "clean (object) with (receptacle): wash in a sink or basin",
        "cool (object) with (receptacle): cool with a fridge",
        "slice (object) with (object): cut with a knife", "inventory: list what you carry",
        "look: describe your surroundings",
    ],
    "scienceworld": [
        "open / close (object): open or close a container or door",
        "activate / deactivate (object): switch a device on or off",
        "connect (object) to (object) / disconnect (object): wire electrical terminals",
        "go to (location): move to a connected room", "look around: describe the room",
        "look at (object) / look in (object): inspect an object or container",
        "pick up (object) / put down (object): take or drop an object",
        "move (object) to (object): place an object in a container",
        "pour (object) in (object) / dunk (object) in (object) / mix (object): handle liquids",
        "focus on (object): mark the object the task is about (required by many tasks)",
        "use (object) on (object): apply a tool", "read (object) / eat (object) / flush (object)",
        "inventory: list what you carry", "task: repeat the task description",
        "wait: let 10 time steps pass", "wait1: let one time step pass",
    ],
    "textworld": [
        "go (north|south|east|west): walk through an exit", "look: describe the room",
        "examine (thing): inspect something", "take (object) / drop (object)",
        "put (object) on (supporter) / insert (object) into (container)",
        "open / close (container or door)", "unlock / lock (thing) with (key)",
        "eat (food)", "inventory: list what you carry",
    ],
}


def render_history(history: Sequence[tuple[str, str | None]], first_index: int = 1) -> str:
  """Numbered "Observation i / Action i" lines; an unparsed action shows as (no valid action)."""
  if not history:
    return "(none: this is the first step)"
  lines = []
  for i, (obs, action) in enumerate(history, start=first_index):
    lines.append(f"Observation {i}: {obs}")
    lines.append(f"Action {i}: {action if action is not None else '(no valid action)'}")
  return "\n".join(lines)


def agent_prompt(env: str, task: str, history: Sequence[tuple[str, str | None]],
                 observation: str, steps_taken: int,
                 admissible: Sequence[str] | None = None) -> str:
  """The per-step agent prompt; `admissible` given = list regime, None = no-list regime.

  `history` is the recent window of (observation, action) pairs (oldest first); `steps_taken`
  counts all steps so far, so the window's numbering continues the episode's.
  """
  if env not in ENV_TITLES:
    raise ValueError(f"unknown env {env!r}; valid: {sorted(ENV_TITLES)}")
  first = steps_taken - len(history) + 1
  parts = [f"You act as an agent in {ENV_TITLES[env]}. Your goal: {task}"]
  if admissible is None:
    forms = "\n".join(f"- {f}" for f in ACTION_FORMS[env])
    parts.append(f"Actions are written in these forms:\n{forms}")
  parts.append(f"Steps taken so far: {steps_taken}. The last {len(history)} observation(s) and "
               f"the action taken after each:\n{render_history(history, first)}")
  parts.append(f"This is step {steps_taken + 1}. Current observation:\n{observation}")
  if admissible is not None:
    parts.append("Actions available now: [" + ", ".join(admissible) + "]")
  choose = "one of the available actions" if admissible is not None else "one action"
  parts.append("Think the situation through step by step inside <think> </think>. Then give "
               f"{choose} for this step inside <action> </action>.")
  return "\n\n".join(parts)


def world_model_prompt(env: str, task: str, history: Sequence[tuple[str, str | None]],
                       observation: str, action: str, privileged_next: str | None = None) -> str:
  """Next-observation prediction prompt; `privileged_next` makes the OPSD teacher's version."""
  if env not in ENV_TITLES:
    raise ValueError(f"unknown env {env!r}; valid: {sorted(ENV_TITLES)}")
  text = (f"You model the dynamics of {ENV_TITLES[env]}: given what happened so far, the current "
          "observation and the action just taken, say what the environment will show next.\n\n"
          f"Task: {task}\n\nInteraction history:\n{render_history(history)}\n\n"
          f"Current observation:\n{observation}\n\nAction taken: {action}\n\n"
          "Reason step by step about what this action does inside <think> </think>. Then write "
          "the next observation you predict inside <next_state> </next_state>.")
  if privileged_next is not None:
    text += ("\n\n[Privileged information, for the teacher only]\nThe environment actually "
             f"returned:\n{privileged_next}")
  return text


_TAG = re.compile(r"<action>(.*?)</action>", re.DOTALL | re.IGNORECASE)
_OPEN = re.compile(r"<action>(.*)$", re.DOTALL | re.IGNORECASE)
_LINE = re.compile(r"^\s*\**action\**\s*[:：]\s*(.+)$", re.IGNORECASE | re.MULTILINE)
_THINK = re.compile(r"<think>(.*?)</think>", re.DOTALL | re.IGNORECASE)


def _clean_action(text: str) -> str | None:
  text = text.strip().splitlines()[0] if text.strip() else ""
  for _ in range(2):  # quotes around a trailing period, or a period after the quotes
    text = text.strip().strip("`'\"*").strip()
    text = re.sub(r"[.。]+$", "", text).strip()
  text = " ".join(text.split())
  return text or None


def parse_action(reply: str, admissible: Sequence[str] | None = None) -> str | None:
  """The action of a reply, tolerant of common slips; None when there is none.

  Takes the last complete <action>...</action> (reasoning may quote the tag), else an unclosed
  trailing <action>, else a final "Action: ..." line. Quotes, backticks, bold markers and a
  trailing period are dropped. With `admissible`, a case/space-insensitive match returns the
  admissible string itself (a non-matching action is still returned; the env judges it).
  """
  if not reply:
    return None
  blocks = _TAG.findall(reply)
  if blocks:
    action = _clean_action(blocks[-1])
  elif (m := _OPEN.search(reply)) is not None:
    action = _clean_action(m.group(1))
  elif lines := _LINE.findall(reply):
    action = _clean_action(lines[-1])
  else:
    return None
  if action is not None and admissible:
    canon = {" ".join(a.lower().split()): a for a in admissible}
    action = canon.get(action.lower(), action)
  return action


def parse_think(reply: str) -> str:
  """The reasoning inside the last <think>...</think>, or "" when absent."""
  blocks = _THINK.findall(reply or "")
  return blocks[-1].strip() if blocks else ""
