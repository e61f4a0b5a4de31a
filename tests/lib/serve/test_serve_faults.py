"""Fault tests against a real server on 127.0.0.1 (tiny random Flax model, in process), each
bounded in time: limits refused at once, a failing request failing alone, abandoned and overdue
generations cancelled, half-open connections closed, malformed bodies, a full queue, auth, and a
50-client load test."""
import concurrent.futures
import json
import socket
import threading
import time
import urllib.request

import pytest

from lib.backends.flax_backend import FlaxBackend
from lib.backends.protocol import Backend, Completion
from lib.serve import OpenAIServer, ServerLimits
from lib.serve.admission import parse_chat
from lib.serve.engine import FlaxEngine

MSG = [{"role": "user", "content": "Range [0, 7]. Reply with one integer."}]
LONG = 4096  # tokens: tens of seconds of decoding if nobody stops it


@pytest.fixture(scope="module")
def backend(tmp_path_factory):
  return FlaxBackend.tiny(tmp_path_factory.mktemp("tiny"), min_batch=4, max_batch=8)


@pytest.fixture(scope="module")
def server(backend):
  limits = ServerLimits(max_new_tokens=LONG, max_batch=8, max_queue=64, socket_timeout_s=1.0)
  srv = OpenAIServer(backend, "accord", limits=limits, chunk_size=8).start()
  post(srv, {"messages": MSG, "max_tokens": 4})  # compile the common programs once
  # ... and the LONG ones (compiling is not interruptible; cancelling at chunk boundaries is).
  request = parse_chat({"messages": MSG, "max_tokens": LONG}, "accord", limits)
  request.prompt_ids = srv.engine.prompt_ids(request)
  srv.engine.generate([request], lambda: [True], lambda: None)
  yield srv
  srv.shutdown(drain_s=1)


def post(srv, body, timeout=60, headers=None):
  data = json.dumps({"model": "accord", **body}).encode()
  req = urllib.request.Request(srv.url + "/chat/completions", data=data,
                               headers={"Content-Type": "application/json", **(headers or {})})
  try:
    with urllib.request.urlopen(req, timeout=timeout) as r:
      return r.status, json.load(r), dict(r.headers)
  except urllib.error.HTTPError as e:
    return e.code, json.loads(e.read()), dict(e.headers)


def raw(srv, payload: bytes, wait_s=10.0) -> bytes:
  with socket.create_connection((srv.host, srv.port), timeout=wait_s) as s:
    s.sendall(payload)
    out = b""
    while chunk := s.recv(65536):
      out += chunk
      if b"\r\n\r\n" in out and b"}" in out:
        break
    return out


def health(srv):
  try:
    with urllib.request.urlopen(srv.url.replace("/v1", "/health"), timeout=10) as r:
      return r.status, json.load(r)
  except urllib.error.HTTPError as e:
    return e.code, json.loads(e.read())


def wait_busy(srv, timeout=30):
  deadline = time.time() + timeout
  while not health(srv)[1]["busy_since"]:
    assert time.time() < deadline, "the long generation never started"
    time.sleep(0.05)


def test_huge_max_tokens_is_refused_at_once(server):
  start = time.perf_counter()
  status, body, _ = post(server, {"messages": MSG, "max_tokens": 10**9})
  assert status == 400 and f"max_new_tokens limit of {LONG}" in body["error"]["message"]
  status, body, _ = post(server, {"messages": [{"role": "user", "content": "x" * 136_000}]})
  assert status == 400 and "max_prompt_tokens" in body["error"]["message"]
  assert time.perf_counter() - start < 5


def test_good_requests_batched_with_a_bad_one_are_answered(server, monkeypatch, caplog):
  bad = {"messages": MSG, "max_tokens": 10**9}
  good = [{"messages": [{"role": "user", "content": f"Range [0, {i}]."}], "max_tokens": 4}
          for i in range(3)]
  with concurrent.futures.ThreadPoolExecutor(4) as pool:
    out = list(pool.map(lambda b: post(server, b)[0], good + [bad]))
  assert out == [200] * 3 + [400]
  # A request that fails inside the model takes only itself down (the batch is retried alone).
  run = FlaxEngine._run

  def fail_on_poison(self, requests, *args):
    if any("POISON" in m["content"] for r in requests for m in r.prompt):
      raise RuntimeError("RESOURCE_EXHAUSTED: injected")
    return run(self, requests, *args)

  monkeypatch.setattr(FlaxEngine, "_run", fail_on_poison)
  bodies = good[:3] + [{"messages": [{"role": "user", "content": "POISON"}], "max_tokens": 4}]
  with concurrent.futures.ThreadPoolExecutor(4) as pool:
    replies = list(pool.map(lambda b: post(server, b), bodies))
  assert [r[0] for r in replies] == [200, 200, 200, 500]
  message = replies[3][1]["error"]["message"]
  assert "RESOURCE_EXHAUSTED: injected" in message
  request_id = message.split("(request ")[1].split(")")[0]
  assert request_id in caplog.text  # the failure is logged under the request's id


@pytest.mark.parametrize("stream", [False, True])
def test_abandoned_generation_is_cancelled_and_the_next_request_answered(server, capfd, stream):
  body = json.dumps({"model": "accord", "messages": MSG, "max_tokens": LONG,
                     "temperature": 0, "stream": stream}).encode()
  with socket.create_connection((server.host, server.port)) as s:
    s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
              b"\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    wait_busy(server)
    if stream:
      assert s.recv(4096).startswith(b"HTTP/1.1 200")  # the stream had begun
  start = time.perf_counter()
  status, _, _ = post(server, {"messages": MSG, "max_tokens": 4}, timeout=30)
  assert status == 200 and time.perf_counter() - start < 5
  assert "Traceback" not in capfd.readouterr().err  # a client hanging up is not an error


def test_overdue_request_is_cancelled_with_504(backend):
  limits = ServerLimits(max_new_tokens=LONG, max_batch=8, request_timeout_s=1.0)
  srv = OpenAIServer(backend, "accord", limits=limits, chunk_size=8).start()
  try:
    start = time.perf_counter()
    status, body, _ = post(srv, {"messages": MSG, "max_tokens": LONG, "temperature": 0})
    assert status == 504 and "request_timeout_s" in body["error"]["message"]
    assert time.perf_counter() - start < 8
  finally:
    srv.shutdown(drain_s=1)


def test_half_open_connections_time_out(server):
  socks = [socket.create_connection((server.host, server.port)) for _ in range(20)]
  for s in socks:
    s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Le")
  start = time.perf_counter()
  for s in socks:
    s.settimeout(5)
    assert s.recv(100) == b""  # the server closed it (socket_timeout_s = 1)
    s.close()
  assert time.perf_counter() - start < 5
  assert post(server, {"messages": MSG, "max_tokens": 2})[0] == 200


@pytest.mark.parametrize("head,body,expect", [
    (b"Content-Length: abc", b"{}", b"Content-Length must be"),
    (b"Content-Length: -1", b"{}", b"Content-Length must be"),
    (None, b"[" * 100_000 + b"]" * 100_000, b"nested too deeply"),
    (None, b"{\"messages\": ", b"not valid JSON"),
])
def test_malformed_bodies_get_400(server, head, body, expect):
  head = head or b"Content-Length: " + str(len(body)).encode()
  reply = raw(server, b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n" + head +
              b"\r\n\r\n" + body)
  assert reply.startswith(b"HTTP/1.1 400") and expect in reply, reply[:300]


def test_full_queue_gets_503_with_retry_after(backend):
  limits = ServerLimits(max_new_tokens=LONG, max_batch=1, max_queue=1)
  srv = OpenAIServer(backend, "accord", limits=limits, chunk_size=8).start()
  try:
    long = {"messages": MSG, "max_tokens": LONG, "temperature": 0}
    threading.Thread(target=post, args=(srv, long), kwargs={"timeout": 2}, daemon=True).start()
    wait_busy(srv)
    threading.Thread(target=post, args=(srv, long), kwargs={"timeout": 2}, daemon=True).start()
    deadline = time.time() + 10
    while health(srv)[1]["queue_depth"] < 1:
      assert time.time() < deadline
      time.sleep(0.05)
    status, body, headers = post(srv, {"messages": MSG, "max_tokens": 2})
    assert status == 503 and "max_queue" in body["error"]["message"]
    assert int(headers["Retry-After"]) >= 1
  finally:
    srv.shutdown(drain_s=0)


def test_bearer_auth(backend, monkeypatch):
  monkeypatch.setenv("ACCORD_SERVE_KEY", "sk-test-77")
  srv = OpenAIServer(backend, "accord", api_key_env="ACCORD_SERVE_KEY").start()
  try:
    assert post(srv, {"messages": MSG, "max_tokens": 2})[0] == 401
    assert post(srv, {"messages": MSG, "max_tokens": 2},
                headers={"Authorization": "Bearer wrong"})[0] == 401
    assert post(srv, {"messages": MSG, "max_tokens": 2},
                headers={"Authorization": "Bearer sk-test-77"})[0] == 200
    assert health(srv)[0] == 200  # /health stays open for probes
  finally:
    srv.shutdown(drain_s=1)


def test_fifty_clients_no_errors(server):
  def client(i):
    return [post(server, {"messages": [{"role": "user", "content": f"Range [0, {i}]."}],
                          "max_tokens": 3, "temperature": 1.0, "seed": i})[0] for _ in range(2)]

  start = time.perf_counter()
  with concurrent.futures.ThreadPoolExecutor(50) as pool:
    statuses = [s for r in pool.map(client, range(50)) for s in r]
  assert statuses == [200] * 100 and time.perf_counter() - start < 120
  status, state = health(server)
  assert status == 200 and state["queue_depth"] == 0 and not state["stuck"]


class SlowBackend(Backend):
  """Echoes after `delay_s`, with no progress reports in between (a batch stuck in the model)."""
  name = "slow"

  def __init__(self, delay_s):
    super().__init__()
    self.delay_s = delay_s

  def _generate(self, conversations, params):
    time.sleep(self.delay_s)
    return [Completion(text="ok", input_tokens=1, output_tokens=1) for _ in conversations]


def test_health_fails_while_the_worker_is_stuck_and_recovers():
  limits = ServerLimits(stuck_after_s=0.3)
  srv = OpenAIServer(SlowBackend(delay_s=1.5), "accord", limits=limits).start()
  try:
    assert health(srv)[0] == 200
    reply = []
    threading.Thread(target=lambda: reply.append(post(srv, {"messages": MSG})),
                     daemon=True).start()
    wait_busy(srv)
    time.sleep(0.5)
    status, state = health(srv)
    assert status == 503 and state["stuck"] and state["seconds_since_progress"] > 0.3
    deadline = time.time() + 10
    while not reply:
      assert time.time() < deadline
      time.sleep(0.05)
    assert reply[0][0] == 200 and reply[0][1]["choices"][0]["message"]["content"] == "ok"
    status, state = health(srv)
    assert status == 200 and not state["busy_since"] and not state["stuck"]
  finally:
    srv.shutdown(drain_s=0)
