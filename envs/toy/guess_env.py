"""A tiny host-loop text environment for backend/host-loop mechanics tests and demos.

Guess a hidden integer in [0, n): each guess is answered "higher", "lower" or "correct". Reward 1
and `info["success"]` on the correct guess. Its optimal policy (bisection) is a scripted policy that
reads only the conversation text, so the whole prompt -> reply -> parse path is exercised.
"""
import re

import numpy as np

_NUM = re.compile(r"-?\d+")


class GuessEnv:

  def __init__(self, n: int = 16):
    if n < 2:
      raise ValueError(f"n must be >= 2, got {n}")
    self.n = n

  def reset(self, seed: int):
    """Draws the target from `seed` and resets the range to [0, n - 1].

    Args:
      seed: seeds the NumPy Generator that draws the target.
    Returns:
      (obs, {}): obs is the range and "Feedback: start" as text.
    """
    self.target = int(np.random.default_rng(seed).integers(self.n))
    self.lo, self.hi = 0, self.n - 1
    return self._obs("start"), {}

  def _obs(self, feedback: str) -> str:
    return f"Range [{self.lo}, {self.hi}]. Feedback: {feedback}. Reply with one integer."

  def step(self, action):
    """Scores one guess and narrows the range.

    Args:
      action: the guess (anything `int()` accepts).
    Returns:
      (obs, reward, terminated, truncated, info): reward 1.0 and terminated on the target, else
      0.0 with "higher"/"lower" feedback; truncated is always False; info {"success": bool}.
    """
    guess = int(action)
    if guess == self.target:
      return self._obs("correct"), 1.0, True, False, {"success": True}
    if guess < self.target:
      self.lo = max(self.lo, guess + 1)
      feedback = "higher"
    else:
      self.hi = min(self.hi, guess - 1)
      feedback = "lower"
    return self._obs(feedback), 0.0, False, False, {"success": False}


def parse_guess(text: str) -> int | None:
  """The first integer in a reply.

  Args:
    text: the model's reply.
  Returns:
    The first (optionally negative) integer in `text`, or None when there is none.
  """
  m = _NUM.search(text)
  return int(m.group()) if m else None


_RANGE = re.compile(r"Range \[(-?\d+), (-?\d+)\]")


class BisectPolicy:
  """Scripted guesser: the midpoint of the last range in the prompt; with probability
  noise.rate("guess") a uniform guess in that range instead."""

  def __init__(self, noise):
    self.noise = noise

  def respond(self, messages, rng) -> str:
    """The scripted reply "I guess <k>" to a conversation.

    Args:
      messages: the conversation; the last "Range [lo, hi]" of its last message is used.
      rng: a NumPy Generator (draws the noisy guess and the noise decision).
    Returns:
      The reply text.
    """
    lo, hi = map(int, _RANGE.findall(messages[-1]["content"])[-1])
    guess = (lo + hi) // 2
    u = int(rng.integers(lo, hi + 1))
    if self.noise.fires("guess", rng):
      guess = u
    return f"I guess {guess}"
