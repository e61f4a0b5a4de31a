"""Hand-built evaluation episode rows (the host-loop rows experiments/wm/eval.py writes)."""
import pytest

from agents.wm.prompts import agent_prompt


def episode_row(condition, steps, status, *, env="textworld", regime="list", level=0, sample=0,
                reset_obs="You are in a kitchen. You see a rusty key.", admissible=None,
                last_info=None, task="open the box", failed_call_at=None):
  """steps: [(reply text, action sent or None for a parse failure, next observation)].

  Each step is a call (the real agent prompt of the step, built from the episode so far) and the
  action event it produced; a None action is sent as the fallback "look" tagged parse_failure.
  `failed_call_at` inserts a failed call (error set, no action) before that step.
  """
  transcript = [{"type": "reset", "obs": reset_obs}]
  history, obs = [], reset_obs
  for i, (text, action, next_obs) in enumerate(steps):
    prompt = agent_prompt(env, task, history[-5:], obs, len(history),
                          admissible if regime == "list" else None)
    msgs = [{"role": "user", "content": prompt}]
    if failed_call_at == i:
      transcript.append({"type": "call", "tag": "actor", "messages": msgs, "text": "",
                         "error": "timeout", "output_tokens": None})
    transcript.append({"type": "call", "tag": "actor", "messages": msgs, "text": text,
                       "error": None, "output_tokens": len(text.split())})
    info = dict(last_info or {}) if i == len(steps) - 1 else {}
    transcript.append({"type": "action", "tag": "parse_failure" if action is None else "actor",
                       "action": "look" if action is None else action, "reward": 0.0,
                       "terminated": False, "truncated": False, "info": info, "obs": next_obs})
    history.append((obs, action))
    obs = next_obs
  return {"condition": condition, "env": env, "regime": regime, "level": level,
          "sample": sample, "status": status, "success": status == "success",
          "transcript": transcript}


@pytest.fixture
def make_row():
  return episode_row
