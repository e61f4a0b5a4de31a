"""HTTP client against a scripted stdlib fake server on loopback: retries, backoff, errors."""
import http.server
import json
import logging
import socket
import threading
import time

import pytest

from lib.backends.openai_http import CallFailed, OpenAIBackend
from lib.backends.protocol import SamplingParams

KEY = "sk-test-SECRET-4242"
MSG = [[{"role": "user", "content": "hi"}]]


class FakeServer:
  """Answers POSTs from a list of statuses (then 200); records arrival times and headers."""

  def __init__(self, statuses=(), delay_s=0.0, echo_auth=False, idle_timeout_s=None):
    self.statuses, self.delay_s, self.echo_auth = list(statuses), delay_s, echo_auth
    self.arrivals, self.auth, self.inflight, self.max_inflight = [], [], 0, 0
    self.client_ports, self.bodies = [], []
    self.lock = threading.Lock()
    fake = self

    class Handler(http.server.BaseHTTPRequestHandler):
      protocol_version = "HTTP/1.1"  # keep-alive, so connection reuse is visible
      timeout = idle_timeout_s  # the server closes connections idle for this long

      def log_message(self, *args):
        pass

      def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with fake.lock:
          fake.client_ports.append(self.client_address[1])
          fake.bodies.append(body)
          fake.arrivals.append(time.perf_counter())
          fake.auth.append(self.headers.get("Authorization"))
          status = fake.statuses.pop(0) if fake.statuses else 200
          fake.inflight += 1
          fake.max_inflight = max(fake.max_inflight, fake.inflight)
        time.sleep(fake.delay_s)
        with fake.lock:
          fake.inflight -= 1
        if status != 200:
          msg = f"injected {status}" + (f" auth={self.headers.get('Authorization')}"
                                        if fake.echo_auth else "")
          payload = json.dumps({"error": {"message": msg}}).encode()
        elif body.get("stream"):
          text = "echo:" + body["messages"][-1]["content"]
          events = [{"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]},
                    {"choices": [{"index": 0, "delta": {"content": text[:3]}}]},
                    {"choices": [{"index": 0, "delta": {"content": text[3:]}}]},
                    {"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]},
                    {"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 2}}]
          self.send_response(200)
          self.send_header("Content-Type", "text/event-stream")
          self.send_header("Connection", "close")
          self.end_headers()
          for e in events:
            self.wfile.write(b"data: " + json.dumps(e).encode() + b"\n\n")
          self.wfile.write(b"data: [DONE]\n\n")
          self.close_connection = True
          return
        else:
          text = "echo:" + body["messages"][-1]["content"]
          payload = json.dumps({"choices": [{"message": {"role": "assistant", "content": text},
                                             "finish_reason": "stop"}],
                                "usage": {"prompt_tokens": 5, "completion_tokens": 2}}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
    threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

  def close(self):
    self.httpd.shutdown()
    self.httpd.server_close()


@pytest.fixture
def key_env(monkeypatch):
  monkeypatch.setenv("ACCORD_TEST_KEY", KEY)
  return "ACCORD_TEST_KEY"


def client(url, key_env=None, **kw):
  kw = {"max_retries": 3, "backoff_base_s": 0.02, "backoff_max_s": 0.5, "timeout_s": 5.0, **kw}
  return OpenAIBackend(url, "tiny", api_key_env=key_env or "", **kw)


def test_retries_429_and_500_then_succeeds(key_env, caplog):
  srv = FakeServer([429, 500, 502])
  try:
    b = client(srv.url, key_env, backoff_base_s=0.05)
    with caplog.at_level(logging.DEBUG):
      (c,) = b.generate(MSG, SamplingParams(max_tokens=4))
  finally:
    srv.close()
  assert c.ok and c.text == "echo:hi" and c.attempts == 4
  assert (c.input_tokens, c.output_tokens) == (5, 2)
  assert srv.auth == [f"Bearer {KEY}"] * 4
  gaps = [b - a for a, b in zip(srv.arrivals, srv.arrivals[1:])]
  # Exponential backoff with equal jitter: gap k >= 0.5 * base * 2^k.
  assert all(g >= 0.5 * 0.05 * 2 ** k for k, g in enumerate(gaps)), gaps
  assert "http_429" in caplog.text and KEY not in caplog.text
  u = b.usage.snapshot()
  assert (u["calls"], u["ok_calls"], u["attempts"], u["input_tokens"]) == (1, 1, 4, 5)


def test_persistent_5xx_is_a_failed_completion_not_an_exception(key_env, caplog):
  srv = FakeServer([503] * 10, echo_auth=True)
  try:
    b = client(srv.url, key_env, max_retries=2)
    with caplog.at_level(logging.DEBUG):
      out = b.generate(MSG * 2)
  finally:
    srv.close()
  assert [c.error for c in out] == ["http_503", "http_503"]
  assert all(c.attempts == 3 for c in out)
  # The server echoed the key in its error body; the client scrubbed it.
  assert "[REDACTED]" in out[0].error_detail and KEY not in out[0].error_detail
  assert KEY not in caplog.text and KEY not in repr(b)
  assert b.usage.snapshot()["failed_calls"] == 2 and b.usage.snapshot()["errors"] == {
      "http_503": 2}


def test_4xx_is_not_retried():
  srv = FakeServer([400, 400])
  try:
    (c,) = client(srv.url).generate(MSG)
  finally:
    srv.close()
  assert c.error == "http_400" and c.attempts == 1 and len(srv.arrivals) == 1
  assert srv.auth == [None]  # no key configured -> no Authorization header


def test_connection_refused_and_timeout():
  with socket.socket() as s:  # a port nobody listens on
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
  (c,) = client(f"http://127.0.0.1:{port}/v1", max_retries=1).generate(MSG)
  assert c.error == "connection" and c.attempts == 2
  srv = FakeServer(delay_s=1.0)
  try:
    start = time.perf_counter()
    (c,) = client(srv.url, max_retries=0, timeout_s=0.2).generate(MSG)
    assert c.error == "timeout" and time.perf_counter() - start < 0.9
  finally:
    srv.close()


def test_bounded_concurrency():
  srv = FakeServer(delay_s=0.15)
  try:
    b = client(srv.url, max_concurrency=3)
    out = b.generate([[{"role": "user", "content": str(i)}] for i in range(9)])
  finally:
    srv.close()
  assert [c.text for c in out] == [f"echo:{i}" for i in range(9)]  # order preserved
  assert srv.max_inflight == 3


def test_missing_key_env_is_a_clear_error(monkeypatch):
  monkeypatch.delenv("ACCORD_NO_SUCH_KEY", raising=False)
  with pytest.raises(ValueError, match="ACCORD_NO_SUCH_KEY"):
    OpenAIBackend("http://127.0.0.1:1/v1", "m", api_key_env="ACCORD_NO_SUCH_KEY")


def test_embed_failure_raises_call_failed():
  srv = FakeServer([500, 500])
  try:
    with pytest.raises(CallFailed, match="http_500"):
      client(srv.url, max_retries=1).embed(["a"])
  finally:
    srv.close()


def test_connections_are_reused_and_streams_assembled():
  srv = FakeServer([400, 409])
  try:
    b = client(srv.url, max_concurrency=1)
    assert [c.error for c in b.generate(MSG * 2)] == ["http_400", "http_409"]  # 4xx: no retry
    out = b.generate([[{"role": "user", "content": str(i)}] for i in range(3)])
    assert [c.text for c in out] == ["echo:0", "echo:1", "echo:2"]
    assert len(set(srv.client_ports)) == 1  # five requests, one keep-alive connection
    streaming = client(srv.url, stream=True)
    (c,) = streaming.generate(MSG)
  finally:
    srv.close()
  assert c.ok and c.text == "echo:hi" and c.finish_reason == "length"
  assert (c.input_tokens, c.output_tokens) == (5, 2)
  assert srv.bodies[-1]["stream"] is True
  assert srv.bodies[-1]["stream_options"] == {"include_usage": True}


def test_a_connection_closed_while_idle_is_reopened_without_a_retry():
  srv = FakeServer(idle_timeout_s=0.2)
  try:
    b = client(srv.url, max_concurrency=1, max_retries=0)
    assert b.generate(MSG)[0].ok
    time.sleep(0.6)  # the server has closed the kept-alive connection by now
    (c,) = b.generate(MSG)
  finally:
    srv.close()
  assert c.ok and c.attempts == 1 and len(set(srv.client_ports)) == 2
