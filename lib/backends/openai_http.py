"""OpenAI-compatible HTTP client backend: chat completions and embeddings over http.client.

Works with any server speaking the OpenAI REST shape (`experiments/serve.py`, vLLM's server, hosted
APIs). A batch of conversations is sent as concurrent single requests through a bounded thread pool
(`max_concurrency`); each pool thread keeps one keep-alive connection and reuses it (a connection
the server closed while idle is reopened once at no retry cost). `stream=True` asks for
server-sent events (`stream_options.include_usage`) and assembles the reply from the chunks. Each
request is retried on 408, 429, any 5xx, connection errors and timeouts, with exponential backoff
and jitter (`Retry-After` honoured, capped at `backoff_max_s`); other 4xx are the client's fault
and are not retried. A request that still fails comes back as a failed `Completion`
(`http_<status>`, `connection`, `timeout`, `bad_response`), never as an exception.

`token_ids=True` makes it token-in/token-out (RL rollouts from a served model,
`lib.serve.policy`): each request asks for `logprobs` and vLLM's `return_token_ids`, and each
reply is a `TokenCompletion` with the prompt ids the server rendered (`prompt_token_ids`, in the
choice as Accord's server sends it or at the top level as vLLM does), the sampled `token_ids` and
their log-probs; a server that leaves them out answers `bad_response`, not a silent text-only
reply.

The API key is read from the environment variable named by `api_key_env` (empty name: no key,
e.g. a local server). It lives only in the Authorization header: it is kept out of `repr`, logs,
error details and results, and is scrubbed from any server error body that echoes it.
"""
import concurrent.futures
import http.client
import json
import os
import random
import socket
import threading
import time
import urllib.parse

import numpy as np
from absl import logging

from lib.backends.protocol import Backend, Completion, SamplingParams, TokenCompletion, failed

RETRY_STATUS = frozenset({408, 429})  # plus every status >= 500


class CallFailed(RuntimeError):
  """An embeddings call that failed after all retries (`code` as in Completion.error)."""

  def __init__(self, code: str, detail: str):
    super().__init__(f"{code}: {detail}")
    self.code, self.detail = code, detail


class _Retryable(Exception):

  def __init__(self, code: str, detail: str, retry_after: float | None = None):
    super().__init__(code)
    self.code, self.detail, self.retry_after = code, detail, retry_after


class _Fatal(Exception):

  def __init__(self, code: str, detail: str):
    super().__init__(code)
    self.code, self.detail = code, detail


class OpenAIBackend(Backend):
  """Client for `{base_url}/chat/completions` and `{base_url}/embeddings`."""

  name = "openai_http"

  def __init__(self, base_url: str, model: str, *, api_key_env: str = "",
               embed_model: str | None = None, max_concurrency: int = 8, timeout_s: float = 60.0,
               max_retries: int = 4, backoff_base_s: float = 0.5, backoff_max_s: float = 30.0,
               send_top_k: bool = False, extra_body: dict | None = None, seed: int = 0,
               stream: bool = False, token_ids: bool = False):
    super().__init__()
    if stream and token_ids:
      raise ValueError("token_ids=True needs stream=False (token ids come in the whole reply)")
    self.token_ids = token_ids
    if not base_url.startswith(("http://", "https://")):
      raise ValueError(f"base_url must start with http:// or https://, got {base_url!r}")
    if max_concurrency < 1 or max_retries < 0 or timeout_s <= 0:
      raise ValueError("need max_concurrency >= 1, max_retries >= 0, timeout_s > 0")
    self.base_url = base_url.rstrip("/")
    parts = urllib.parse.urlsplit(self.base_url)
    self._https, self._netloc, self._prefix = parts.scheme == "https", parts.netloc, parts.path
    self._local = threading.local()  # one keep-alive connection per pool thread
    self.stream = stream
    self.model = model
    self.embed_model = embed_model or model
    self.api_key_env = api_key_env
    self._api_key = ""
    if api_key_env:
      if not os.environ.get(api_key_env):
        raise ValueError(f"environment variable {api_key_env} (named by api_key_env) is not set")
      self._api_key = os.environ[api_key_env]
    self.timeout_s = timeout_s
    self.max_retries = max_retries
    self.backoff_base_s = backoff_base_s
    self.backoff_max_s = backoff_max_s
    self.send_top_k = send_top_k
    self.extra_body = dict(extra_body or {})
    self._jitter = random.Random(seed)
    self._jitter_lock = threading.Lock()
    self._pool = concurrent.futures.ThreadPoolExecutor(max_concurrency,
                                                       thread_name_prefix="openai_http")

  def __repr__(self) -> str:
    # Deliberately omits the key (and its value's length).
    return (f"OpenAIBackend(base_url={self.base_url!r}, model={self.model!r}, "
            f"api_key_env={self.api_key_env!r})")

  def close(self) -> None:
    """Waits for in-flight requests, stops the thread pool and drops the HTTP connection."""
    self._pool.shutdown(wait=True)
    self._drop_connection()

  # ---- transport --------------------------------------------------------------------------

  def _scrub(self, text: str) -> str:
    text = text[:300]
    return text.replace(self._api_key, "[REDACTED]") if self._api_key else text

  def _connection(self) -> tuple[http.client.HTTPConnection, bool]:
    """This thread's connection and whether it already served a request."""
    conn = getattr(self._local, "conn", None)
    if conn is not None:
      return conn, True
    cls = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
    self._local.conn = cls(self._netloc, timeout=self.timeout_s)
    return self._local.conn, False

  def _drop_connection(self) -> None:
    conn = getattr(self._local, "conn", None)
    self._local.conn = None
    if conn is not None:
      conn.close()

  def _exchange(self, path: str, data: bytes, headers: dict, stream: bool):
    """One request/response on this thread's connection -> (status, headers, body or chunks)."""
    for attempt in range(2):
      conn, reused = self._connection()
      try:
        conn.request("POST", self._prefix + path, body=data, headers=headers)
        resp = conn.getresponse()
        if stream and resp.status == 200:
          payload = _read_events(resp)
        else:
          payload = resp.read()
        if resp.will_close:
          self._drop_connection()
        return resp.status, resp.headers, payload
      except (socket.timeout, TimeoutError) as e:
        self._drop_connection()
        raise _Retryable("timeout", f"no response within {self.timeout_s}s") from e
      except (ConnectionError, http.client.HTTPException, OSError) as e:
        self._drop_connection()
        # A kept-alive connection the server closed while idle: reopen once, free of charge.
        if not (reused and attempt == 0 and isinstance(
            e, (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError))):
          raise _Retryable("connection", self._scrub(f"{type(e).__name__}: {e}")) from None
    raise AssertionError("unreachable")

  def _post_once(self, path: str, body: dict, stream: bool = False):
    headers = {"Content-Type": "application/json"}
    if self._api_key:
      headers["Authorization"] = f"Bearer {self._api_key}"
    status, resp_headers, payload = self._exchange(path, json.dumps(body).encode(), headers,
                                                   stream)
    if status >= 400:
      detail = self._scrub(payload.decode("utf-8", "replace"))
      code = f"http_{status}"
      if status in RETRY_STATUS or status >= 500:
        retry_after = None
        try:
          retry_after = float(resp_headers.get("Retry-After", ""))
        except (TypeError, ValueError):
          pass
        raise _Retryable(code, detail, retry_after)
      raise _Fatal(code, detail)
    if stream:
      return payload
    try:
      return json.loads(payload)
    except ValueError:
      raise _Fatal("bad_response", self._scrub(f"non-JSON body: {payload[:120]!r}")) from None

  def _backoff(self, attempt: int, retry_after: float | None) -> float:
    cap = min(self.backoff_max_s, self.backoff_base_s * (2 ** attempt))
    with self._jitter_lock:
      u = self._jitter.random()
    delay = cap * (0.5 + 0.5 * u)  # "equal jitter": never ~0, spreads synchronized retries
    if retry_after is not None:
      delay = max(delay, min(retry_after, self.backoff_max_s))
    return delay

  def _post(self, path: str, body: dict, stream: bool = False
            ) -> tuple[dict | list | None, str | None, str, int]:
    """POST with retries -> (json or stream events, error code, error detail, attempts)."""
    for attempt in range(self.max_retries + 1):
      try:
        return self._post_once(path, body, stream), None, "", attempt + 1
      except _Fatal as e:
        return None, e.code, e.detail, attempt + 1
      except _Retryable as e:
        if attempt == self.max_retries:
          return None, e.code, e.detail, attempt + 1
        delay = self._backoff(attempt, e.retry_after)
        logging.warning("%s%s: %s (attempt %d/%d), retrying in %.2fs", self.base_url, path,
                        e.code, attempt + 1, self.max_retries + 1, delay)
        time.sleep(delay)
    raise AssertionError("unreachable")

  # ---- chat -------------------------------------------------------------------------------

  def _chat_body(self, messages, p: SamplingParams) -> dict:
    body = {"model": self.model, "messages": messages, "max_tokens": p.max_tokens,
            "temperature": p.temperature, "top_p": p.top_p}
    if p.stop:
      body["stop"] = list(p.stop)
    if p.seed is not None:
      body["seed"] = p.seed
    if p.regex is not None:
      body["structured_outputs"] = {"regex": p.regex}
    if self.send_top_k and p.top_k:
      body["top_k"] = p.top_k
    if self.stream:
      body["stream"], body["stream_options"] = True, {"include_usage": True}
    if self.token_ids:
      body["logprobs"], body["return_token_ids"] = True, True
    body.update(self.extra_body)
    return body

  def _chat_one(self, messages, p: SamplingParams) -> Completion:
    start = time.perf_counter()
    data, code, detail, attempts = self._post("/chat/completions", self._chat_body(messages, p),
                                              stream=self.stream)
    latency = time.perf_counter() - start
    if code is not None:
      return failed(code, detail, latency, attempts)
    try:
      if self.stream:
        data = _assemble_chat(data)
      choice = data["choices"][0]
      text = choice["message"]["content"] or ""
      usage = data.get("usage") or {}
      if self.token_ids:
        return _token_completion(data, choice, text, latency, attempts)
      return Completion(text=text, input_tokens=usage.get("prompt_tokens"),
                        output_tokens=usage.get("completion_tokens"), latency_s=latency,
                        finish_reason=choice.get("finish_reason"), attempts=attempts)
    except (KeyError, IndexError, TypeError) as e:
      return failed("bad_response", self._scrub(f"missing {e} in {str(data)[:120]}"), latency,
                    attempts)

  def _generate(self, conversations, params):
    futures = [self._pool.submit(self._chat_one, m, p) for m, p in zip(conversations, params)]
    return [f.result() for f in futures]

  # ---- embeddings -------------------------------------------------------------------------

  def _embed(self, texts):
    if not texts:
      return np.zeros((0, 0), np.float32)
    data, code, detail, _ = self._post("/embeddings", {"model": self.embed_model, "input": texts})
    if code is not None:
      raise CallFailed(code, detail)
    try:
      rows = sorted(data["data"], key=lambda d: d["index"])
      out = np.asarray([r["embedding"] for r in rows], dtype=np.float32)
    except (KeyError, TypeError, ValueError) as e:
      raise CallFailed("bad_response", f"embeddings: {e}") from None
    if out.shape[0] != len(texts):
      raise CallFailed("bad_response", f"{out.shape[0]} embeddings for {len(texts)} texts")
    return out


def _token_completion(data: dict, choice: dict, text: str, latency: float,
                      attempts: int) -> Completion:
  """A `return_token_ids` chat reply -> TokenCompletion (prompt ids from the choice, Accord's
  server, or from the top level, vLLM's), or a failed `bad_response` naming what is missing."""
  prompt = choice.get("prompt_token_ids") or data.get("prompt_token_ids")
  ids = choice.get("token_ids")
  content = (choice.get("logprobs") or {}).get("content")
  if not prompt or ids is None or content is None or len(content) != len(ids):
    return failed("bad_response", "no prompt_token_ids / token_ids / logprobs in the reply: the "
                  "server must support return_token_ids with logprobs (Accord's server, vLLM >= "
                  "0.10.2)", latency, attempts)
  return TokenCompletion(text=text, input_tokens=len(prompt), output_tokens=len(ids),
                         latency_s=latency, finish_reason=choice.get("finish_reason"),
                         attempts=attempts, prompt_ids=list(prompt), token_ids=list(ids),
                         logprobs=[float(e["logprob"]) for e in content])


def _read_events(resp) -> list[dict]:
  """A server-sent-events body -> its JSON `data:` payloads, up to `[DONE]`."""
  events = []
  for line in resp:
    line = line.strip()
    if not line.startswith(b"data:"):
      continue
    data = line[5:].strip()
    if data == b"[DONE]":
      break
    try:
      events.append(json.loads(data))
    except ValueError:
      raise _Fatal("bad_response", f"non-JSON stream event: {data[:120]!r}") from None
  resp.read()  # drain, so a keep-alive connection stays usable
  return events


def _assemble_chat(events: list[dict]) -> dict:
  """Chat stream chunks -> the equivalent chat.completion body (first choice, usage)."""
  text, reason, usage = [], None, None
  for e in events:
    usage = e.get("usage") or usage
    for choice in e.get("choices") or ():
      if choice.get("index", 0) != 0:
        continue
      text.append((choice.get("delta") or {}).get("content") or "")
      reason = choice.get("finish_reason") or reason
  return {"choices": [{"message": {"content": "".join(text)}, "finish_reason": reason}],
          "usage": usage or {}}
