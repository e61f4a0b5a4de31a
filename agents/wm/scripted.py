"""A CPU stand-in for the audit's models: mechanics checks of the evaluation, not a model result.

`ScriptedAuditModel` is the policy of a `lib.backends.scripted.ScriptedBackend` (backend kind
"scripted" in experiments/wm/eval.py). It reads the prompts of `agents.wm.prompts`: an agent
prompt gets a random listed action (list regime) or a random generic action (no-list regime), with
probability `p_garble` a reply without an <action>; a world-model prompt gets "no change" (the
current observation) as its predicted next state.
"""
import re

_LISTED = re.compile(r"Actions available now: \[(.*)\]")
_GENERIC = ("look", "inventory", "look around", "go north", "go south", "open door to kitchen",
            "go to kitchen", "wait1")


class ScriptedAuditModel:
  """CPU stand-in: a random listed action (list regime) or a random generic action (no-list);
  with probability `p_garble` a reply without an <action>. Predicts "no change" as next state."""

  def __init__(self, p_garble: float = 0.1):
    self.p_garble = p_garble

  def respond(self, messages, rng):
    """The reply text to a conversation.

    Args:
      messages: the chat messages; only the last one (the prompt) is read.
      rng: a seeded `np.random.Generator` (the backend's per-request generator).
    Returns:
      the reply text with <think> and <action> or <next_state> tags.
    """
    prompt = messages[-1]["content"]
    if "<next_state>" in prompt:
      current = prompt.split("Current observation:\n", 1)[-1].split("\n\nAction taken:")[0]
      return f"<think>Assume little changes.</think><next_state>{current}</next_state>"
    if rng.random() < self.p_garble:
      return "<think>Unsure.</think>"
    listed = _LISTED.search(prompt)
    pool = listed.group(1).split(", ") if listed else list(_GENERIC)
    return f"<think>Try something.</think><action>{pool[int(rng.integers(len(pool)))]}</action>"
