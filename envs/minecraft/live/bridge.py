"""JSON-lines subprocess bridge to one Node process (server.js or bots.js).

Requests go down one pipe and replies come back on another (the child finds them through
ACCORD_FD_IN / ACCORD_FD_OUT), because flying-squid keeps a console on stdin/stdout. The child
runs in its own session so `close()` can end it and anything it spawned; every live bridge is
also closed at interpreter exit. Node's own output goes to a log file for diagnostics.
"""
import atexit
import itertools
import json
import os
import queue
import signal
import subprocess
import threading
import time
import weakref

from envs.minecraft.live.errors import BackendFailure
from envs.minecraft.live.node_setup import PACKAGE_DIR, ensure_installed

_LIVE: "weakref.WeakSet[NodeProcess]" = weakref.WeakSet()


class NodeProcess:
  """One Node child speaking JSON lines; `request` is synchronous with a timeout."""

  def __init__(self, script: str, args=(), log_path: str | None = None):
    node = ensure_installed()
    req_r, self._req_w = os.pipe()
    self._rep_r, rep_w = os.pipe()
    env = dict(os.environ, ACCORD_FD_IN=str(req_r), ACCORD_FD_OUT=str(rep_w))
    self._log = open(log_path, "ab") if log_path else subprocess.DEVNULL
    self.script = script
    self.proc = subprocess.Popen(
        [node, os.path.join(PACKAGE_DIR, script), *map(str, args)], cwd=PACKAGE_DIR, env=env,
        stdin=subprocess.DEVNULL, stdout=self._log, stderr=self._log, pass_fds=(req_r, rep_w),
        start_new_session=True)
    os.close(req_r)
    os.close(rep_w)
    self._ids = itertools.count(1)
    self._replies: queue.Queue = queue.Queue()
    self._reader = threading.Thread(target=self._read, daemon=True)
    self._reader.start()
    _LIVE.add(self)

  @property
  def pid(self) -> int:
    return self.proc.pid

  def alive(self) -> bool:
    return self.proc.poll() is None

  def _read(self) -> None:
    with os.fdopen(self._rep_r, "rb") as f:
      for line in f:
        try:
          self._replies.put(json.loads(line))
        except ValueError:
          continue
    self._replies.put(None)            # EOF: the child closed its end (exited)

  def _next(self, deadline: float, what: str) -> dict:
    left = deadline - time.monotonic()
    if left <= 0:
      raise BackendFailure(f"{self.script}: no reply to {what} in time")
    try:
      msg = self._replies.get(timeout=left)
    except queue.Empty:
      raise BackendFailure(f"{self.script}: no reply to {what} in time") from None
    if msg is None:
      self._replies.put(None)
      raise BackendFailure(f"{self.script} exited (code {self.proc.poll()}) during {what}")
    return msg

  def wait_event(self, event: str, timeout_s: float) -> dict:
    deadline = time.monotonic() + timeout_s
    while True:
      msg = self._next(deadline, f"startup event {event!r}")
      if msg.get("event") == event:
        return msg

  def request(self, op: str, timeout_s: float = 30.0, **fields) -> dict:
    """Sends {"id", "op", **fields}; returns the reply's result or raises BackendFailure."""
    rid = next(self._ids)
    line = json.dumps({"id": rid, "op": op, **fields}) + "\n"
    try:
      if self._req_w is None:
        raise OSError("bridge is closed")
      os.write(self._req_w, line.encode())
    except OSError as e:
      raise BackendFailure(f"{self.script}: cannot send {op}: {e}") from e
    deadline = time.monotonic() + timeout_s
    while True:
      msg = self._next(deadline, op)
      if msg.get("id") == rid:         # earlier replies that arrived after a timeout are stale
        if not msg.get("ok"):
          raise BackendFailure(f"{self.script} {op}: {msg.get('error')}")
        return msg.get("result")

  def kill(self, sig=signal.SIGKILL) -> None:
    """Signals the child's whole process group (tests use it to simulate a crash)."""
    try:
      os.killpg(self.proc.pid, sig)
    except ProcessLookupError:
      pass

  def close(self, grace_s: float = 3.0) -> None:
    """EOF on the request pipe, then SIGTERM, then SIGKILL; always reaps the child."""
    if self._req_w is not None:
      try:
        os.close(self._req_w)
      except OSError:
        pass
      self._req_w = None
    try:
      self.proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
      self.kill(signal.SIGTERM)
      try:
        self.proc.wait(timeout=grace_s)
      except subprocess.TimeoutExpired:
        self.kill(signal.SIGKILL)
        self.proc.wait(timeout=grace_s)
    self.kill(signal.SIGKILL)          # anything the child left in its session
    if self._log is not subprocess.DEVNULL:
      self._log.close()
      self._log = subprocess.DEVNULL
    _LIVE.discard(self)


@atexit.register
def _close_all() -> None:
  for p in list(_LIVE):
    p.close(grace_s=1.0)
