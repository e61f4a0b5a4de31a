"""Live backend lifecycle: server crash -> SERVER_FAILURE + restart, bot reconnect, timeouts, and
no Node process left behind (close, interpreter exit, parent killed)."""
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from agents.gencoord import protocol, suites, templates
from agents.gencoord.policies import registry as policies

pytestmark = [pytest.mark.skipif(shutil.which("node") is None, reason="live backend needs Node.js"),
              pytest.mark.long_module(50)]   # scheduled first: tests/conftest.py
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__)))))


def _gone(pid: int) -> bool:
  """True when no process with this pid, or in its process group, is still running."""
  for entry in os.listdir("/proc"):
    if not entry.isdigit():
      continue
    try:
      with open(f"/proc/{entry}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
      continue
    state, pgid = fields[0], int(fields[2])
    if state != "Z" and (int(entry) == pid or pgid == pid):
      return False
  return True


def _wait_gone(pids, timeout_s=15.0) -> bool:
  end = time.monotonic() + timeout_s
  while time.monotonic() < end:
    if all(_gone(p) for p in pids):
      return True
    time.sleep(0.1)
  return False


def _episodes(n):
  pick = {}
  for ep in suites.suite("heldout"):
    pick.setdefault(templates.get(ep.template).family, ep)
  return list(pick.values())[:n]


@pytest.fixture(scope="module")
def rt(tmp_path_factory):
  from envs.minecraft.live.node_setup import ensure_installed
  from envs.minecraft.live.runtime import LiveConfig, LiveRuntime
  ensure_installed()
  runtime = LiveRuntime(LiveConfig(speed=4.0,
                                   log_dir=str(tmp_path_factory.mktemp("logs"))))
  runtime.start()
  yield runtime
  pids = runtime.pids()
  runtime.close()
  assert _wait_gone(pids)


def test_server_crash_is_recorded_and_the_server_restarted(rt):
  eps = _episodes(3)
  killed = []
  default_timeout = rt.config.op_timeout_s

  def world(ep):                  # crash the server right after the first episode's reset
    rt.config.op_timeout_s = default_timeout
    w = rt.world_for(ep)
    if not killed:
      killed.append(rt.server.pid)
      rt.server.kill(signal.SIGKILL)
      # The bots see no reply from a dead server: the crashed episode's first operation fails by
      # its timeout, shortened for that episode only (the default would idle the test 30 s).
      rt.config.op_timeout_s = 5.0
    return w

  starts = rt.starts
  try:
    recs = protocol.run_forward(eps, policies.make("rule_minimal_request"), "true", world=world)
  finally:
    rt.config.op_timeout_s = default_timeout
  assert killed and recs[0].failure_code == "SERVER_FAILURE", recs[0].result
  assert all(r.success for r in recs[1:]), [r.result for r in recs[1:]]
  assert rt.starts == starts + 1 and rt.server.pid != killed[0]
  assert _wait_gone(killed)
  row_codes = {r.failure_code for r in recs}
  assert row_codes <= {"", "SERVER_FAILURE"}


def test_dropped_bot_reconnects(rt):
  ep = _episodes(1)[0]
  rt.world_for(ep)
  rt.bot_request("drop", agent=ep.sender)
  time.sleep(0.5)
  rec = protocol.run_forward([ep], policies.make("rule_minimal_request"), "true",
                             world=rt.world_for)[0]
  assert rec.success, rec.result
  assert ep.sender in rt.server_request("ping")["players"]


def test_operation_timeout_is_a_backend_failure_then_recovers(rt):
  from envs.minecraft import world as W
  from envs.minecraft.live.errors import BackendFailure
  ep = _episodes(1)[0]
  world = rt.world_for(ep)
  default_timeout = rt.config.op_timeout_s
  rt.config.op_timeout_s = 1.0
  try:
    with pytest.raises(BackendFailure):
      world.apply(W.Wait(ep.sender, 400))      # 20 s of game time > 1 s timeout
  finally:
    rt.config.op_timeout_s = default_timeout
  starts = rt.starts
  rec = protocol.run_forward([ep], policies.make("rule_minimal_request"), "true",
                             world=rt.world_for)[0]
  assert rec.success and rt.starts == starts + 1


def test_startup_timeout_raises_and_leaves_nothing(monkeypatch):
  from envs.minecraft.live import runtime as R
  from envs.minecraft.live.errors import BackendFailure
  started = []

  class Recorded(R.NodeProcess):
    def __init__(self, *args, **kwargs):
      super().__init__(*args, **kwargs)
      started.append(self.pid)

  monkeypatch.setattr(R, "NodeProcess", Recorded)
  rt = R.LiveRuntime(R.LiveConfig(startup_timeout_s=0.05))
  with pytest.raises(BackendFailure, match="startup"):
    rt.start()
  assert rt.server is None and rt.bots is None and len(started) == 1
  assert _wait_gone(started, 5.0)


_CHILD = """
import sys, time
sys.path.insert(0, {root!r})
from envs.minecraft.live.runtime import LiveRuntime
rt = LiveRuntime()
rt.start()
print(*rt.pids(), flush=True)
if sys.argv[1] == "hang":
  time.sleep(120)
else:
  sys.stdin.readline()   # exit only after the parent has seen its children alive
"""


@pytest.mark.parametrize("how", ["exit", "killed"])
def test_no_process_survives_its_parent(how):
  # "exit": the parent returns without close() (atexit cleans up); "killed": the parent is
  # SIGKILLed, so only the children's EOF on their control pipe can end them.
  child = subprocess.Popen([sys.executable, "-c", _CHILD.format(root=ROOT),
                            "hang" if how == "killed" else "exit"],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
  try:
    pids = [int(p) for p in child.stdout.readline().split()]
    assert len(pids) == 2 and not any(_gone(p) for p in pids)
    if how == "killed":
      child.kill()
    else:
      child.stdin.write("go\n")
      child.stdin.flush()
    child.wait(timeout=30)
    assert _wait_gone(pids), pids
  finally:
    child.kill()
    child.wait()
