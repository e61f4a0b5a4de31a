"""An OpenAI-compatible HTTP server over any `Backend`.

Routes (routes.py): POST /v1/chat/completions, /v1/completions, /v1/responses, /v1/embeddings,
/tokenize, /detokenize, /update_weights_from_disk (with `weight_updates`: weights.py); GET
/v1/models, /v1/models/{id}, /tokenizer_info, /health (worker state: queue depth, busy since,
progress, weights_version; 503 when stuck). Any other route is a 404 that lists these.

Stack: the standard library's `ThreadingHTTPServer`, one thread per connection. Chosen over an
ASGI server (uvicorn/starlette) because it adds no dependency to the core install and the model
is driven by one worker thread anyway, so async buys no throughput; what an ASGI stack would have
given us is small here: socket timeouts are the handler's `timeout`, a disconnected client is
noticed by polling its socket while the request waits (then the job is cancelled at the next
decode chunk), and streaming is writing `text/event-stream` lines on a closing connection as the
engine hands over text between decode chunks.

Each request: auth (optional bearer key) -> body read within limits (Content-Length checked,
JSON depth errors caught) -> admission (`admission.py`: every field validated, prompt and
max_tokens against the limits, 400 naming the limit) -> the bounded worker queue (503 +
Retry-After when full) -> the answer as JSON or as a stream. Client errors are 4xx, server
faults 5xx; every request is logged once with its id, status, latency and token counts.
"""
import dataclasses
import hmac
import http.server
import json
import os
import queue
import select
import socket
import threading
import time

from absl import logging

from lib.backends.protocol import Backend
from lib.serve import responses, routes, weights
from lib.serve.admission import RequestError, ServerLimits
from lib.serve.backend_engine import make_engine
from lib.serve.engine import Cancelled, FlaxEngine
from lib.serve.worker import Job, ModelWorker

LOOPBACK = ("127.0.0.1", "localhost", "::1")


class _HTTPServer(http.server.ThreadingHTTPServer):
  # The stdlib default listen backlog (5) refuses connections when a client opens dozens at once.
  request_queue_size = 256
  daemon_threads = True

  def handle_error(self, request, client_address):
    # A client that hangs up is routine, not a traceback on stderr.
    logging.debug("connection from %s ended with an error", client_address, exc_info=True)


class OpenAIServer:
  """Serves `backend` on host:port (port 0 picks a free one; see `.port`).

  Args:
    backend: any Backend; a FlaxBackend gets cancellation, log-probs and /v1/completions.
    model_name: the id clients must name (or omit).
    limits: ServerLimits; its context_length defaults to the model's.
    api_key_env: name of an environment variable holding a bearer key clients must send;
      "" = no auth (a loud warning when binding beyond loopback).
    chunk_size: decode steps between cancellation checks.
    weight_updates: serve POST /update_weights_from_disk (a FlaxBackend only; `load_params` is
      the in-process push and needs no flag).
  """

  def __init__(self, backend: Backend, model_name: str, host: str = "127.0.0.1", port: int = 0,
               limits: ServerLimits | None = None, batch_window_s: float = 0.01,
               api_key_env: str = "", chunk_size: int = 16, weight_updates: bool = False):
    limits = limits or ServerLimits()
    self.backend, self.model_name = backend, model_name
    self.engine = make_engine(backend, chunk_size=chunk_size, max_batch=limits.max_batch,
                              max_constraint_cells=limits.max_constraint_cells)
    if limits.context_length is None and self.engine.context_length is not None:
      limits = dataclasses.replace(limits, context_length=self.engine.context_length)
    self.limits = limits
    self.created = int(time.time())
    self.weight_updates, self.weights_version = weight_updates, 0
    self.worker = ModelWorker(self.engine, limits, batch_window_s)
    self._api_key = ""
    if api_key_env:
      self._api_key = os.environ.get(api_key_env, "")
      if not self._api_key:
        raise ValueError(f"environment variable {api_key_env} (named by api_key_env) is not set")
    elif host not in LOOPBACK:
      logging.warning("!!! serving on %s WITHOUT authentication: anyone who can reach this port "
                      "can use the model; set api_key_env to require a bearer key !!!", host)
    self._httpd = _HTTPServer((host, port), self._handler_class())
    self.host, self.port = self._httpd.server_address[:2]
    self._http_thread = None

  @property
  def url(self) -> str:
    """The OpenAI base URL, `http://<host>:<port>/v1`."""
    return f"http://{self.host}:{self.port}/v1"

  @property
  def batches(self) -> list[int]:
    """Generation requests per engine call (for tests and benchmarks)."""
    return self.worker.batches

  def start(self) -> "OpenAIServer":
    """Starts the model worker and the HTTP thread; returns self."""
    self.worker.start()
    self._http_thread = threading.Thread(target=self._httpd.serve_forever, daemon=True,
                                         name="http")
    self._http_thread.start()
    logging.info("OpenAI-compatible server for %r on %s (limits %s)", self.model_name, self.url,
                 self.limits)
    return self

  def shutdown(self, drain_s: float = 10.0) -> None:
    """Stops accepting connections and fails queued requests with 503.

    Args:
      drain_s: seconds the running batch may finish before it is cancelled.
    """
    if self._http_thread is not None:  # shutdown() waits for serve_forever, which must run
      self._httpd.shutdown()
    self._httpd.server_close()
    self.worker.stop(drain_s)

  def health(self) -> tuple[int, dict]:
    """-> (200 or 503 when the worker is dead or stuck, the worker's state for /health)."""
    state = self.worker.health()
    ok = state["alive"] and not state["stuck"]
    return (200 if ok else 503), {"status": "ok" if ok else "unhealthy", "model": self.model_name,
                                  "weights_version": self.weights_version, **state}

  def load_params(self, params, timeout_s: float = 600.0) -> int:
    """Replaces the served model's weights between batches (`weights.push`); returns the new
    weights_version (also in /health). Args: params: the new nnx.Param state (e.g. the trainer's
    `state.params`: the served tree and shapes, cast to its dtypes). timeout_s: how long it may
    wait for the running batch. Raises: TypeError: no Flax weights. ValueError: another tree."""
    if not isinstance(self.engine, FlaxEngine):
      raise TypeError(f"{type(self.backend).__name__} has no Flax weights to replace")
    weights.push(self.worker, self.engine.backend.model, params, timeout_s)
    self.weights_version += 1
    return self.weights_version

  def weights_from_disk(self, body) -> dict:
    """POST /update_weights_from_disk (weights.py). Args: body: {"model_path"}. Raises:
    RequestError: 404 when off, 400 naming a bad checkpoint."""
    if not self.weight_updates or not isinstance(self.engine, FlaxEngine):
      raise RequestError(404, "POST /update_weights_from_disk is off on this server (start it "
                              "with weight_updates=True over a Flax model)", "not_found")
    try:
      version = self.load_params(weights.params_from_disk(self.engine.backend.model, body))
    except ValueError as e:
      raise RequestError(400, str(e)[:300], param="model_path") from None
    return {"success": True, "message": f"loaded {body['model_path']}", "version": version}

  # ---- request handling (called on the connection's thread) -------------------------------

  def authorized(self, header: str | None) -> bool:
    """Whether an Authorization header is `Bearer <api key>` (always True without a key).

    Args:
      header: the request's Authorization header, or None.
    Returns:
      True if the request may proceed (constant-time comparison).
    """
    if not self._api_key:
      return True
    expected = f"Bearer {self._api_key}".encode()
    return hmac.compare_digest((header or "").encode(), expected)

  def prepare(self, route: str, body) -> Job:
    """A Job for the worker (`routes.prepare`). Args: route, body: the request's. Raises:
    RequestError: the 4xx to answer with."""
    return routes.prepare(self.engine, self.model_name, self.limits, route, body)

  def answer(self, route: str, job: Job):
    """The body of a finished non-stream job (`routes.answer`; its error raised if it failed).
    Args: route: unused (the job's kind decides). job: a done Job."""
    return routes.answer(self.engine, self.model_name, job)

  def _handler_class(self):
    return _make_handler(self)


def _client_gone(sock: socket.socket) -> bool:
  """True when the peer closed its side (readable with nothing to read)."""
  try:
    readable, _, _ = select.select([sock], [], [], 0)
    return bool(readable) and sock.recv(1, socket.MSG_PEEK) == b""
  except (OSError, ValueError):
    return True


def _make_handler(server: OpenAIServer):

  class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = server.limits.socket_timeout_s  # half-sent requests and idle keep-alives end

    def log_message(self, fmt, *args):  # the stdlib's per-request lines go to absl debug
      logging.debug("%s " + fmt, self.address_string(), *args)

    def _write(self, status: int, payload: dict, headers: dict | None = None) -> None:
      data = json.dumps(payload).encode()
      self.send_response(status)
      self.send_header("Content-Type", "application/json")
      self.send_header("Content-Length", str(len(data)))
      for k, v in (headers or {}).items():
        self.send_header(k, v)
      self.end_headers()
      self.wfile.write(data)

    def _event(self, payload: dict | str) -> None:
      data = payload if isinstance(payload, str) else json.dumps(payload)
      self.wfile.write(b"data: " + data.encode() + b"\n\n")
      self.wfile.flush()

    def _stream(self, job: Job, updates: queue.Queue) -> bool:
      """Streams a generation as it decodes: text arrives between decode chunks through
      `updates`; the rest, the finish reasons and usage once the job is done. False when the
      client went away (the job is then cancelled)."""
      fmt = responses.StreamFormat(job.payload, job.request_id, server.model_name,
                                   server.engine.token_text)
      self.send_response(200)
      self.send_header("Content-Type", "text/event-stream")
      self.send_header("Cache-Control", "no-cache")
      self.send_header("Connection", "close")
      self.end_headers()
      self.close_connection = True  # the stream's end is the connection's end
      sent = [""] * job.rows
      try:
        for chunk in fmt.start():
          self._event(chunk)
        while True:
          finished = job.done.wait(0.05)
          while not updates.empty():
            i, text = updates.get()
            sent[i] += text
            self._event(fmt.delta(i, text))
          if finished:
            break
          if _client_gone(self.connection):
            raise ConnectionError("client went away")
      except (ConnectionError, socket.timeout):
        job.cancel()
        return False
      if isinstance(job.error, Cancelled):
        job.error = RequestError(504, "request cancelled: over the request_timeout_s limit "
                                      f"({server.limits.request_timeout_s}s)", "timeout")
      if job.error is not None:  # the status line is gone: the error travels as an event
        error = job.error if isinstance(job.error, RequestError) else RequestError(
            500, f"generation failed (request {job.request_id}): {type(job.error).__name__}: "
                 f"{str(job.error)[:300]}", "server_error")
        if not isinstance(job.error, RequestError):
          logging.error("request %s failed: %.500s", job.request_id, job.error)
        self._event(error.body())
      else:
        for chunk in fmt.end(job.result, sent):
          self._event(chunk)
      self._event("[DONE]")
      return True

    def _error(self, e: RequestError) -> None:
      headers = {}
      if e.retry_after_s is not None:
        headers["Retry-After"] = str(max(1, int(round(e.retry_after_s))))
      if e.status == 401:
        headers["WWW-Authenticate"] = "Bearer"
      self._write(e.status, e.body(), headers)

    def _handle(self, method: str) -> None:
      start = time.perf_counter()
      route = self.path.split("?")[0].rstrip("/")
      job, status, tokens = None, 200, ""
      try:
        if route != "/health" and not server.authorized(self.headers.get("Authorization")):
          raise RequestError(401, "missing or wrong bearer token", "authentication_error")
        if method == "GET":
          status = self._get(route)
          return
        body = self._read_body()
        if route == "/update_weights_from_disk":
          self._write(200, server.weights_from_disk(body))
          return
        if route in routes.TOKEN_ROUTES:
          self._write(200, routes.tokens(server.engine, server.model_name, server.limits, route,
                                         body))
          return
        if route not in routes.GENERATION_ROUTES:
          raise routes.no_route("POST", self.path)
        prepared = server.prepare(route, body)
        streaming = prepared.kind == "generate" and prepared.payload[0].stream
        if streaming:
          updates, offset = queue.Queue(), 0
          for r in prepared.payload:  # choice indices run on across the prompts
            r.on_text = lambda i, text, o=offset: updates.put((o + i, text))
            offset += r.n
        job = server.worker.submit(prepared)
        if streaming:
          if not self._stream(job, updates):
            status = 499  # client closed the connection
          elif job.error is not None:
            status = getattr(job.error, "status", 500)
        elif not self._wait(job):
          status = 499  # client closed the connection; nothing to send
          return
        if job.done.is_set() and job.error is None and job.kind == "generate":
          tokens = f" tokens={job.result.prompt_tokens}+{job.result.completion_tokens}"
        if not streaming:
          self._write(200, server.answer(route, job))
      except RequestError as e:
        status = e.status
        self._error(e)
      except Cancelled:
        overdue = job is not None and job.should_stop() and not job.cancelled
        status = 504 if overdue else 503
        self._error(RequestError(504, "request cancelled: over the request_timeout_s limit "
                                      f"({server.limits.request_timeout_s}s)", "timeout")
                    if overdue else RequestError(503, "request cancelled: the server is "
                                                      "stopping", "server_error", retry_after_s=5))
      except (ConnectionError, socket.timeout):
        status = 499
        self.close_connection = True
      except Exception as e:  # pylint: disable=broad-except
        status = 500
        rid = job.request_id if job else "-"
        logging.error("request %s failed: %s: %.500s", rid, type(e).__name__, e)
        logging.debug("request %s traceback", rid, exc_info=True)
        try:
          self._error(RequestError(500, f"generation failed (request {rid}): "
                                        f"{type(e).__name__}: {str(e)[:300]}", "server_error"))
        except (ConnectionError, socket.timeout):
          self.close_connection = True
      finally:
        logging.info("%s %s %d %.3fs id=%s%s", method, route, status,
                     time.perf_counter() - start, job.request_id if job else "-", tokens)

    def _get(self, route: str) -> int:
      if route == "/health":
        status, body = server.health()
        self._write(status, body)
        return status
      if route == "/v1/models":
        self._write(200, {"object": "list",
                          "data": [responses.model_card(server.model_name, server.created)]})
        return 200
      if route == f"/v1/models/{server.model_name}":
        self._write(200, responses.model_card(server.model_name, server.created))
        return 200
      if route == "/tokenizer_info":
        self._write(200, routes.tokenizer_info(server.engine))
        return 200
      if route.startswith("/v1/models/"):
        raise RequestError(404, f"model {route.split('/', 3)[3]!r} not found; this server "
                                f"serves {server.model_name!r}", "model_not_found")
      raise routes.no_route("GET", self.path)

    def _read_body(self):
      raw_length = self.headers.get("Content-Length")
      if raw_length is None:
        raise RequestError(411, "Content-Length is required")
      if not raw_length.strip().isdigit():
        self.close_connection = True  # the body's end is unknown: this connection is done
        raise RequestError(400, f"Content-Length must be a non-negative integer, got "
                                f"{raw_length[:40]!r}")
      length = int(raw_length)
      if length > server.limits.max_body_bytes:
        self.close_connection = True
        raise RequestError(413, f"body of {length} bytes exceeds the max_body_bytes limit of "
                                f"{server.limits.max_body_bytes}")
      raw = self.rfile.read(length)
      if len(raw) < length:
        raise ConnectionError("body ended early")
      try:
        return json.loads(raw or b"null")
      except RecursionError:
        raise RequestError(400, "body is nested too deeply") from None
      except ValueError:
        raise RequestError(400, "body is not valid JSON") from None

    def _wait(self, job: Job) -> bool:
      """Waits for the job; False (and the job cancelled) when the client went away."""
      while not job.done.wait(0.1):
        if _client_gone(self.connection):
          job.cancel()
          self.close_connection = True
          return False
      return True

    def do_GET(self):
      self._handle("GET")

    def do_POST(self):
      self._handle("POST")

  return Handler
