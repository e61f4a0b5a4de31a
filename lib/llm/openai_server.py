"""An OpenAI-compatible HTTP server over any `Backend` (stdlib `ThreadingHTTPServer`).

Routes: POST /v1/chat/completions, POST /v1/embeddings, GET /v1/models, GET /health (status plus
how many chat requests were answered in how many backend batches).

Every request thread hands its job to one model worker thread, which waits up to `batch_window_s`
for more jobs (at most `max_batch`) and answers all the chat requests it gathered with ONE
`backend.generate` call, so concurrent clients share sampler batches and the model is only ever
touched by one thread. Bad requests get 400 (or 404 for an unknown model/route) with an OpenAI-style
`{"error": {...}}` body; a failed backend call gets 500, which clients treat as retryable.
"""
import http.server
import json
import queue
import threading
import time
import uuid

from absl import logging

from lib.llm.backend import Backend, SamplingParams, validate_conversation

MAX_BODY = 8 << 20


class RequestError(ValueError):

  def __init__(self, status: int, message: str, kind: str = "invalid_request_error"):
    super().__init__(message)
    self.status, self.kind = status, kind


class _Job:

  def __init__(self, kind: str, payload):
    self.kind, self.payload = kind, payload
    self.done = threading.Event()
    self.result = None
    self.error: Exception | None = None


def parse_chat_request(body: dict, model_name: str) -> tuple[list, SamplingParams]:
  """An OpenAI chat-completions body -> (conversation, SamplingParams); RequestError if invalid."""
  if not isinstance(body, dict):
    raise RequestError(400, "request body must be a JSON object")
  _check_model(body, model_name)
  if body.get("stream"):
    raise RequestError(400, "stream=true is not supported by this server")
  if body.get("n", 1) != 1:
    raise RequestError(400, "only n=1 is supported")
  try:
    conv = validate_conversation(body.get("messages"))
  except (TypeError, ValueError) as e:
    raise RequestError(400, f"messages: {e}") from None
  stop = body.get("stop") or ()
  try:
    params = SamplingParams(
        max_tokens=int(body.get("max_completion_tokens") or body.get("max_tokens") or 256),
        temperature=float(body.get("temperature", 1.0)), top_p=float(body.get("top_p", 1.0)),
        top_k=int(body.get("top_k") or 0), stop=(stop,) if isinstance(stop, str) else tuple(stop),
        seed=None if body.get("seed") is None else int(body["seed"]))
  except (TypeError, ValueError) as e:
    raise RequestError(400, f"sampling parameters: {e}") from None
  return conv, params


def _check_model(body: dict, model_name: str) -> None:
  model = body.get("model")
  if model is not None and model != model_name:
    raise RequestError(404, f"model {model!r} not found; this server serves {model_name!r}",
                       "model_not_found")


class _HTTPServer(http.server.ThreadingHTTPServer):
  # The stdlib default listen backlog (5) refuses connections when a client opens dozens at once.
  request_queue_size = 256
  daemon_threads = True


class OpenAIServer:
  """Serves `backend` on host:port (port 0 picks a free one; see `.port`)."""

  def __init__(self, backend: Backend, model_name: str, host: str = "127.0.0.1", port: int = 0,
               max_batch: int = 32, batch_window_s: float = 0.01):
    self.backend, self.model_name = backend, model_name
    self.max_batch, self.batch_window_s = max_batch, batch_window_s
    self.created = int(time.time())
    self.batches: list[int] = []  # chat requests per backend.generate call (for tests/benchmarks)
    self._jobs: queue.Queue = queue.Queue()
    self._httpd = _HTTPServer((host, port), self._handler_class())
    self.host, self.port = self._httpd.server_address[:2]
    self._threads = [threading.Thread(target=self._worker, daemon=True, name="model_worker"),
                     threading.Thread(target=self._httpd.serve_forever, daemon=True,
                                      name="http")]

  @property
  def url(self) -> str:
    return f"http://{self.host}:{self.port}/v1"

  def start(self) -> "OpenAIServer":
    for t in self._threads:
      t.start()
    logging.info("OpenAI-compatible server for %r on %s", self.model_name, self.url)
    return self

  def shutdown(self) -> None:
    self._httpd.shutdown()
    self._httpd.server_close()
    self._jobs.put(None)

  # ---- model worker -----------------------------------------------------------------------

  def submit(self, kind: str, payload):
    job = _Job(kind, payload)
    self._jobs.put(job)
    job.done.wait()
    if job.error is not None:
      raise job.error
    return job.result

  def _worker(self) -> None:
    while True:
      job = self._jobs.get()
      if job is None:
        return
      jobs = [job]
      deadline = time.perf_counter() + self.batch_window_s
      while len(jobs) < self.max_batch:
        try:
          nxt = self._jobs.get(timeout=max(0.0, deadline - time.perf_counter()))
        except queue.Empty:
          break
        if nxt is None:
          self._jobs.put(None)
          break
        jobs.append(nxt)
      chats = [j for j in jobs if j.kind == "chat"]
      if chats:
        self._run(chats, lambda: self.backend.generate([j.payload[0] for j in chats],
                                                       [j.payload[1] for j in chats]))
        self.batches.append(len(chats))
      for j in jobs:
        if j.kind == "embed":
          self._run([j], lambda j=j: [self.backend.embed(j.payload)])

  @staticmethod
  def _run(jobs, fn) -> None:
    try:
      results = fn()
      for j, r in zip(jobs, results):
        j.result = r
    except Exception as e:  # pylint: disable=broad-except
      for j in jobs:
        j.error = e
    for j in jobs:
      j.done.set()

  # ---- HTTP -------------------------------------------------------------------------------

  def _chat(self, body: dict) -> dict:
    conv, params = parse_chat_request(body, self.model_name)
    c = self.submit("chat", (conv, params))
    if not c.ok:
      raise RequestError(500, f"generation failed: {c.error}", "server_error")
    return {"id": f"chatcmpl-{uuid.uuid4().hex[:16]}", "object": "chat.completion",
            "created": int(time.time()), "model": self.model_name,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": c.text},
                         "finish_reason": c.finish_reason or "stop"}],
            "usage": {"prompt_tokens": c.input_tokens, "completion_tokens": c.output_tokens,
                      "total_tokens": (c.input_tokens or 0) + (c.output_tokens or 0)}}

  def _embeddings(self, body: dict) -> dict:
    if not isinstance(body, dict):
      raise RequestError(400, "request body must be a JSON object")
    _check_model(body, self.model_name)
    texts = body.get("input")
    texts = [texts] if isinstance(texts, str) else texts
    if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
      raise RequestError(400, "input must be a string or a non-empty list of strings")
    try:
      vecs = self.submit("embed", texts)
    except NotImplementedError as e:
      raise RequestError(400, str(e)) from None
    n_tokens = getattr(self.backend, "count_tokens", lambda t: 0)(texts)
    return {"object": "list", "model": self.model_name,
            "data": [{"object": "embedding", "index": i, "embedding": v.tolist()}
                     for i, v in enumerate(vecs)],
            "usage": {"prompt_tokens": n_tokens, "total_tokens": n_tokens}}

  def _models(self) -> dict:
    return {"object": "list", "data": [{"id": self.model_name, "object": "model",
                                        "created": self.created, "owned_by": "accord"}]}

  def _handler_class(self):
    server = self

    class Handler(http.server.BaseHTTPRequestHandler):
      protocol_version = "HTTP/1.1"

      def log_message(self, fmt, *args):  # requests go to absl at debug level, not stderr
        logging.debug("%s " + fmt, self.address_string(), *args)

      def _send(self, status: int, payload: dict) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

      def _error(self, e: RequestError) -> None:
        self._send(e.status, {"error": {"message": str(e), "type": e.kind, "code": e.status}})

      def do_GET(self):
        if self.path.rstrip("/") == "/v1/models":
          self._send(200, server._models())
        elif self.path.rstrip("/") == "/health":
          self._send(200, {"status": "ok", "model": server.model_name,
                           "batches": len(server.batches), "requests": sum(server.batches)})
        else:
          self._error(RequestError(404, f"no route GET {self.path}", "not_found"))

      def do_POST(self):
        routes = {"/v1/chat/completions": server._chat, "/v1/embeddings": server._embeddings}
        route = routes.get(self.path.rstrip("/"))
        try:
          length = int(self.headers.get("Content-Length") or 0)
          if length > MAX_BODY:
            raise RequestError(413, f"body of {length} bytes exceeds {MAX_BODY}")
          raw = self.rfile.read(length)
          if route is None:
            raise RequestError(404, f"no route POST {self.path}", "not_found")
          try:
            body = json.loads(raw or b"null")
          except ValueError:
            raise RequestError(400, "body is not valid JSON") from None
          self._send(200, route(body))
        except RequestError as e:
          self._error(e)
        except Exception as e:  # pylint: disable=broad-except
          logging.exception("request failed")
          self._error(RequestError(500, f"{type(e).__name__}: {e}", "server_error"))

    return Handler
