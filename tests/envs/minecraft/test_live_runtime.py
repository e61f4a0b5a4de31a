"""LiveRuntime without Node: the wait for the agents' start cells, against a scripted server."""
import pytest

from envs.minecraft.live import runtime as R
from envs.minecraft.live.errors import BackendFailure

STARTS = {"agent_a": (24.5, 24.5), "agent_b": (26.5, 24.5)}


class ScriptedServer(R.LiveRuntime):
  """agent_a's stale position packet landed after its teleport: the server has it at (12, 21)
  until it is teleported again (`place`), if `obeys`; agent_b is where it should be."""

  def __init__(self, obeys: bool):
    super().__init__(R.LiveConfig(op_timeout_s=0.5))
    self.obeys, self.calls = obeys, []
    self.pos = {"agent_a": [12.0, 21.0], "agent_b": [26.5, 24.501]}

  def server_request(self, op, **fields):
    self.calls.append(op)
    if op == "place" and self.obeys:
      self.pos.update(fields["agents"])
      return {"placed": len(fields["agents"])}
    if op == "place":
      return {"placed": 0}
    assert op == "state"
    return {"agents": {n: {"pos": list(p)} for n, p in self.pos.items()}}

  def bot_request(self, op, **fields):
    self.calls.append(f"{op}:{fields['agent']}")
    return {"ok": True}


@pytest.fixture(autouse=True)
def _fast_retry(monkeypatch):
  monkeypatch.setattr(R, "RETELEPORT_S", 0.05)


def test_an_agent_a_stale_packet_moved_is_teleported_again():
  rt = ScriptedServer(obeys=True)
  rt._place_agents(STARTS)
  assert rt.pos["agent_a"] == [24.5, 24.5] and not rt.broken
  # Only the agent that was off its cell is teleported and re-synced.
  first_place = rt.calls.index("place")
  assert rt.calls[first_place + 1:first_place + 2] == ["sync:agent_a"]
  assert "sync:agent_b" not in rt.calls[first_place:]


def test_an_agent_that_never_gets_back_is_a_backend_failure_naming_it():
  rt = ScriptedServer(obeys=False)
  with pytest.raises(BackendFailure, match=r"agent_a at \[12.0, 21.0\], not \(24.5, 24.5\)$"):
    rt._place_agents(STARTS)
  assert rt.broken and rt.calls.count("place") >= 2
