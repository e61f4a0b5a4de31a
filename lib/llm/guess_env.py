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
    self.target = int(np.random.default_rng(seed).integers(self.n))
    self.lo, self.hi = 0, self.n - 1
    return self._obs("start"), {}

  def _obs(self, feedback: str) -> str:
    return f"Range [{self.lo}, {self.hi}]. Feedback: {feedback}. Reply with one integer."

  def step(self, action):
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
  m = _NUM.search(text)
  return int(m.group()) if m else None


_RANGE = re.compile(r"Range \[(-?\d+), (-?\d+)\]")


class BisectPolicy:
  """Scripted guesser: the midpoint of the last range in the prompt; with probability
  noise.rate("guess") a uniform guess in that range instead."""

  def __init__(self, noise):
    self.noise = noise

  def respond(self, messages, rng) -> str:
    lo, hi = map(int, _RANGE.findall(messages[-1]["content"])[-1])
    guess = (lo + hi) // 2
    u = int(rng.integers(lo, hi + 1))
    if self.noise.fires("guess", rng):
      guess = u
    return f"I guess {guess}"
