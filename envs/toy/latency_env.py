"""A host-loop text environment that only waits: each step sleeps a fixed latency and uses no CPU.

It stands in for a simulator whose time goes to waiting (a remote game server, a JVM busy on
another core, a rate-limited API), so the env executors' benchmark (configs/bench/host_executors.py)
can show the host loop scaling with workers past the machine's core count: with a step of L
seconds, `inline` manages at most 1 / L steps per second whatever the cores, while N workers
sleep N steps at once. An episode is `episode_steps` steps long and ends `terminated` with
`info["success"]` True and reward 1, so every executor plays the same number of steps.
"""
import time

import numpy as np

from envs.toy.guess_env import parse_guess


class LatencyEnv:
  """Sleeps `step_latency_s` per step (`reset_latency_s` per reset); `episode_steps` steps long.

  Args:
    step_latency_s: seconds each `step` waits (time.sleep: no CPU).
    episode_steps: steps until the episode terminates (with success).
    reset_latency_s: seconds each `reset` waits.
  """

  def __init__(self, step_latency_s: float = 0.02, episode_steps: int = 8,
               reset_latency_s: float = 0.0):
    if step_latency_s < 0 or reset_latency_s < 0:
      raise ValueError(f"latencies must be >= 0, got step {step_latency_s}, reset "
                       f"{reset_latency_s}")
    if episode_steps < 1:
      raise ValueError(f"episode_steps must be >= 1, got {episode_steps}")
    self.step_latency_s, self.reset_latency_s = float(step_latency_s), float(reset_latency_s)
    self.episode_steps = int(episode_steps)
    self.max_steps = self.episode_steps

  def reset(self, seed: int):
    """Starts an episode whose observations carry a number drawn from `seed`.

    Args:
      seed: seeds the NumPy Generator that draws the episode's number (so two seeds give two
        different conversations, and a scripted policy different replies).
    Returns:
      (obs, {}): obs names the episode's number and the step count.
    """
    time.sleep(self.reset_latency_s)
    self.number = int(np.random.default_rng(seed).integers(1000))
    self.steps = 0
    return self._obs("start"), {}

  def _obs(self, last: str) -> str:
    return (f"Episode number {self.number}. Step {self.steps} of {self.episode_steps}. "
            f"Last action: {last}. Reply with one integer.")

  def step(self, action):
    """Waits `step_latency_s`, then counts the step.

    Args:
      action: anything; echoed in the next observation.
    Returns:
      (obs, reward, terminated, truncated, info): reward 1.0, terminated and info["success"]
      True on the episode's last step, else 0.0, False and False; truncated is always False.
    """
    time.sleep(self.step_latency_s)
    self.steps += 1
    done = self.steps >= self.episode_steps
    return self._obs(str(action)), float(done), done, False, {"success": done}

  def close(self) -> None:
    """Nothing to release (the env holds no process or file)."""


_EPISODE = "Episode number "


class EchoPolicy:
  """Scripted reply for LatencyEnv: the episode's number plus a draw in [0, 10) from the request's
  generator, so replies depend on the episode and on the request seed only."""

  def respond(self, messages, rng) -> str:
    """The reply "I pick <k>" to a conversation.

    Args:
      messages: the conversation; the episode number is read from its last message.
      rng: a NumPy Generator (the backend's per-request generator).
    Returns:
      The reply text.
    """
    text = messages[-1]["content"]
    at = text.rfind(_EPISODE)
    number = parse_guess(text[at + len(_EPISODE):]) if at >= 0 else 0
    return f"I pick {int(number or 0) + int(rng.integers(10))}"
