"""Lifecycle of the live backend: server and bot processes on a free 127.0.0.1 port.

  with LiveRuntime() as rt:
    world = rt.world_for(episode)          # reset the workcell, bots at their start cells
    execute_and_verify(plan, world, episode.terminal)

`world_for` restarts both processes first when either has died (a crash in the previous
episode is recorded by the caller as SERVER_FAILURE), so one crash costs one episode. Every
operation has a timeout, startup has its own, and `close()` (also run at exit) stops both
processes and their process groups.
"""
import collections
import dataclasses
import os
import socket
import time

from envs.minecraft.live.bridge import NodeProcess
from envs.minecraft.live.errors import BackendFailure
from envs.minecraft.live.live_world import LiveWorld
from envs.minecraft.world import Layout


# Seconds an agent may stay off its start cell before the server teleports it again.
RETELEPORT_S = 1.0


def free_port() -> int:
  """A TCP port that is free on 127.0.0.1 right now (loopback only)."""
  with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


@dataclasses.dataclass
class LiveConfig:
  speed: float = 1.0               # movement speed, multiple of vanilla (pathfinder sprints: ~5.6 blocks/s)
  startup_timeout_s: float = 60.0
  op_timeout_s: float = 30.0
  log_dir: str | None = None       # Node logs (server.log, bots.log) for diagnostics


class LiveRuntime:

  def __init__(self, config: LiveConfig | None = None):
    self.config = config or LiveConfig()
    self.server: NodeProcess | None = None
    self.bots: NodeProcess | None = None
    self.port = 0
    self.agents: tuple = ()
    self.broken = False            # a request failed: restart before the next episode
    self.starts = 0                # process (re)starts, the first included
    self.op_seconds: dict = collections.defaultdict(list)    # action type -> [seconds]
    self.episode_seconds: dict = {}                          # episode id -> seconds (latest)
    self.episode_times: list = []                            # seconds of every episode run

  # ------------------------------------------------------------------ processes
  def _log(self, name: str) -> str | None:
    if self.config.log_dir is None:
      return None
    os.makedirs(self.config.log_dir, exist_ok=True)
    return os.path.join(self.config.log_dir, name)

  def start(self) -> None:
    self.close()
    self.port = free_port()
    self.server = NodeProcess("server.js", [self.port], self._log("server.log"))
    try:
      self.server.wait_event("ready", self.config.startup_timeout_s)
      self.bots = NodeProcess("bots.js", [self.port, self.config.speed], self._log("bots.log"))
    except BaseException:
      self.close()
      raise
    self.agents, self.broken = (), False
    self.starts += 1

  def alive(self) -> bool:
    return (not self.broken and self.server is not None and self.server.alive() and
            self.bots is not None and self.bots.alive())

  def ensure_started(self) -> None:
    if not self.alive():
      self.start()

  def close(self) -> None:
    for proc in (self.bots, self.server):
      if proc is not None:
        proc.close()
    self.server = self.bots = None

  def __enter__(self):
    self.start()
    return self

  def __exit__(self, *exc):
    self.close()

  def pids(self) -> list:
    return [p.pid for p in (self.server, self.bots) if p is not None]

  # ------------------------------------------------------------------ requests
  def _request(self, proc, what: str, op: str, fields: dict, timeout_s: float | None = None):
    if proc is None:
      raise BackendFailure(f"{what} is not running")
    try:
      return proc.request(op, timeout_s or self.config.op_timeout_s, **fields)
    except BackendFailure:
      self.broken = True
      raise

  def server_request(self, op: str, **fields):
    return self._request(self.server, "live server", op, fields)

  def bot_request(self, op: str, **fields):
    # Logging bots in (and reconnecting dropped ones) is bounded by the startup timeout.
    timeout_s = self.config.startup_timeout_s if op == "connect" else None
    return self._request(self.bots, "bot driver", op, fields, timeout_s)

  def state(self) -> dict:
    """The server's authoritative agents (pos, inventory, mode), chests, built list, ground."""
    return self.server_request("state")

  # ------------------------------------------------------------------ episodes
  def reset(self, layout: Layout, episode_id: str = "") -> LiveWorld:
    """Rebuilds the workcell of `layout` on the server; (re)starts processes when needed."""
    t0 = time.perf_counter()
    self.ensure_started()
    agents = tuple(layout.agent_starts)
    self.bot_request("connect", agents=list(agents))     # (re)connects dropped bots
    self.agents = tuple(sorted(set(self.agents) | set(agents)))
    self.server_request("reset", layout=layout_json(layout))
    starts = {n: (pos[0] + 0.5, pos[1] + 0.5) for n, (pos, _, _) in layout.agent_starts.items()}
    self._place_agents(starts)
    return LiveWorld(self, layout, episode_id, t0)

  def _place_agents(self, starts: dict) -> None:
    """Waits until the server has every agent at `starts` ({name: (x, z)}), re-teleporting.

    The server sends no teleport before the agent's login has ended (workcell.js: flying-squid's
    login ends by sending the player back to where it logged in, which undid a teleport sent
    earlier). A position packet a bot sent before it saw the teleport can still land after it;
    the bot's answer to the teleport follows it. As a bound on anything else that moves an agent,
    the wait re-teleports the agents still off their cells every `RETELEPORT_S` (and re-syncs
    their bots), until the op timeout: usually done in tens of ms, seconds on a loaded machine.
    """
    deadline = time.monotonic() + self.config.op_timeout_s
    off, agents = dict(starts), {}
    while True:
      for name, pos in off.items():
        self.bot_request("sync", agent=name, pos=list(pos))
      retry = time.monotonic() + RETELEPORT_S
      while time.monotonic() < min(retry, deadline):
        agents = self.state()["agents"]
        off = {n: p for n, p in starts.items() if n not in agents or abs(
            agents[n]["pos"][0] - p[0]) + abs(agents[n]["pos"][1] - p[1]) >= 0.5}
        if not off:
          return
        time.sleep(0.02)
      if time.monotonic() >= deadline:
        break
      self.server_request("place", agents={n: list(p) for n, p in off.items() if n in agents})
    self.broken = True
    raise BackendFailure("agents did not reach their start cells on the server: " + ", ".join(
        f"{n} at {agents[n]['pos'] if n in agents else None}, not {p}" for n, p in off.items()))

  def world_for(self, ep) -> LiveWorld:
    """The `world` hook of the GenCoord closed loop: a live world for episode `ep`."""
    return self.reset(ep.layout, ep.episode_id)

  def latency_table(self) -> list:
    """Per action type: count, mean, p50, p95, max wall seconds (bridge round trip included)."""
    rows = []
    for kind, xs in sorted(self.op_seconds.items()):
      s = sorted(xs)
      rows.append({"operation": kind, "n": len(s), "mean_ms": 1e3 * sum(s) / len(s),
                   "p50_ms": 1e3 * s[len(s) // 2], "p95_ms": 1e3 * s[min(len(s) - 1,
                                                                       int(0.95 * len(s)))],
                   "max_ms": 1e3 * s[-1]})
    return rows


def layout_json(layout: Layout) -> dict:
  return {
      "locations": {n: {"kind": loc.kind, "pos": list(loc.pos), "block": loc.block}
                    for n, loc in layout.locations.items()},
      "agents": {n: {"pos": list(pos), "inventory": dict(inv), "mode": mode}
                 for n, (pos, inv, mode) in layout.agent_starts.items()},
      "containers": {n: dict(items) for n, items in layout.container_starts.items()},
  }
