"""LiveWorld: the simulator's `World` interface backed by the live server.

`apply(action)` sends one compiled action to the acting agent's Mineflayer bot; a refusal by the
world (out of reach, missing items, wrong mode) raises the simulator's `ActionError`, a dead or
silent process raises `BackendFailure`. Everything the verifier reads (`count`, `agents`,
`containers`, `built`) comes from the server's own inventories and chest contents, read back
after the action, never from what the bots believe.
"""
import time
import types
from typing import NamedTuple

from envs.minecraft import world as W
from envs.minecraft.live.errors import BackendFailure

# Where a bot stands to use a location: beside the block, inside the simulator's 4.5-block reach.
APPROACH = (0.5, 2.5)


class LiveWorld:

  def __init__(self, runtime, layout: W.Layout, episode_id: str = "", t0: float | None = None):
    self.runtime = runtime
    self.layout = layout
    self.locations = layout.locations
    self.episode_id = episode_id
    self._t0 = time.perf_counter() if t0 is None else t0
    self.actions = 0
    self._slot = len(runtime.episode_times)
    runtime.episode_times.append(0.0)
    self._touch()

  def _touch(self) -> None:
    seconds = time.perf_counter() - self._t0
    self.runtime.episode_seconds[self.episode_id] = seconds
    self.runtime.episode_times[self._slot] = seconds

  # --------------------------------------------------------------- authoritative readback
  def state(self) -> dict:
    s = self.runtime.state()
    self._touch()
    return s

  @property
  def agents(self) -> dict:
    return {n: types.SimpleNamespace(pos=tuple(a["pos"]), inventory=dict(a["inventory"]),
                                     mode=a["mode"])
            for n, a in self.state()["agents"].items() if n in self.layout.agent_starts}

  @property
  def containers(self) -> dict:
    return self.state()["containers"]

  @property
  def built(self) -> list:
    return [tuple(b) for b in self.state()["built"]]

  def count(self, agent: str, item: str) -> int:
    a = self.state()["agents"].get(agent)
    if a is None:
      raise BackendFailure(f"agent {agent} is not on the server")
    return a["inventory"].get(item, 0)

  # --------------------------------------------------------------- actions
  def _target(self, action) -> list | None:
    if isinstance(action, W.Navigate):
      loc = self.locations.get(action.location)
      if loc is None:
        raise W.ActionError(f"no location named {action.location!r}")
      return [loc.pos[0] + APPROACH[0], loc.pos[1] + APPROACH[1]]
    if isinstance(action, W.NavigateToAgent):
      if action.other not in self.layout.agent_starts:
        raise W.ActionError(f"unknown agent {action.other!r}")
      x, z = self.state()["agents"][action.other]["pos"]
      return [x + 1, z]                # one block beside the peer, as in the simulator
    return None

  def apply(self, action) -> None:
    if action.agent not in self.layout.agent_starts:
      raise W.ActionError(f"unknown agent {action.agent!r}")
    if not self.runtime.alive():       # fail fast instead of waiting out a dead server
      raise BackendFailure("the live server or bot driver is not running")
    kind = type(action).__name__
    payload = dict(action._asdict(), type=kind)
    t0 = time.perf_counter()
    reply = self.runtime.bot_request("act", agent=action.agent, action=payload,
                                     target=self._target(action))
    self.runtime.op_seconds[kind].append(time.perf_counter() - t0)
    self.actions += 1
    self._touch()
    if reply.get("refused"):
      raise W.ActionError(reply["refused"])


class Withdraw(NamedTuple):
  """Live-only action: take items out of an opened chest (the simulator has no withdraw)."""
  agent: str
  chest: str
  item: str
  count: int
