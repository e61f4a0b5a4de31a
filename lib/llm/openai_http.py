"""OpenAI-compatible HTTP client backend: chat completions and embeddings over stdlib urllib.

Works with any server speaking the OpenAI REST shape (`experiments/serve.py`, vLLM's server, hosted
APIs). A batch of conversations is sent as concurrent single requests through a bounded thread pool
(`max_concurrency`). Each request is retried on 429, any 5xx, connection errors and timeouts, with
exponential backoff and jitter (`Retry-After` honoured, capped at `backoff_max_s`); other 4xx are
not retried. A request that still fails comes back as a failed `Completion` (`http_<status>`,
`connection`, `timeout`, `bad_response`), never as an exception.

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
import urllib.error
import urllib.request

import numpy as np
from absl import logging

from lib.llm.backend import Backend, Completion, SamplingParams, failed

RETRY_STATUS = frozenset({408, 409, 425, 429})  # plus every status >= 500


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
               send_top_k: bool = False, extra_body: dict | None = None, seed: int = 0):
    super().__init__()
    if not base_url.startswith(("http://", "https://")):
      raise ValueError(f"base_url must start with http:// or https://, got {base_url!r}")
    if max_concurrency < 1 or max_retries < 0 or timeout_s <= 0:
      raise ValueError("need max_concurrency >= 1, max_retries >= 0, timeout_s > 0")
    self.base_url = base_url.rstrip("/")
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
    self._pool.shutdown(wait=True)

  # ---- transport --------------------------------------------------------------------------

  def _scrub(self, text: str) -> str:
    text = text[:300]
    return text.replace(self._api_key, "[REDACTED]") if self._api_key else text

  def _post_once(self, path: str, body: dict) -> dict:
    headers = {"Content-Type": "application/json"}
    if self._api_key:
      headers["Authorization"] = f"Bearer {self._api_key}"
    req = urllib.request.Request(self.base_url + path, data=json.dumps(body).encode(),
                                 headers=headers, method="POST")
    try:
      with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
        raw = resp.read()
    except urllib.error.HTTPError as e:
      detail = self._scrub(e.read().decode("utf-8", "replace") if e.fp else str(e.reason))
      code = f"http_{e.code}"
      if e.code in RETRY_STATUS or e.code >= 500:
        retry_after = None
        try:
          retry_after = float(e.headers.get("Retry-After", ""))
        except (TypeError, ValueError):
          pass
        raise _Retryable(code, detail, retry_after) from None
      raise _Fatal(code, detail) from None
    except (socket.timeout, TimeoutError) as e:
      raise _Retryable("timeout", f"no response within {self.timeout_s}s") from e
    except urllib.error.URLError as e:
      if isinstance(e.reason, (socket.timeout, TimeoutError)):
        raise _Retryable("timeout", f"no response within {self.timeout_s}s") from None
      raise _Retryable("connection", self._scrub(str(e.reason))) from None
    except (ConnectionError, http.client.HTTPException, OSError) as e:
      raise _Retryable("connection", self._scrub(f"{type(e).__name__}: {e}")) from None
    try:
      return json.loads(raw)
    except ValueError:
      raise _Fatal("bad_response", self._scrub(f"non-JSON body: {raw[:120]!r}")) from None

  def _backoff(self, attempt: int, retry_after: float | None) -> float:
    cap = min(self.backoff_max_s, self.backoff_base_s * (2 ** attempt))
    with self._jitter_lock:
      u = self._jitter.random()
    delay = cap * (0.5 + 0.5 * u)  # "equal jitter": never ~0, spreads synchronized retries
    if retry_after is not None:
      delay = max(delay, min(retry_after, self.backoff_max_s))
    return delay

  def _post(self, path: str, body: dict) -> tuple[dict | None, str | None, str, int]:
    """POST with retries -> (json, error code, error detail, attempts)."""
    for attempt in range(self.max_retries + 1):
      try:
        return self._post_once(path, body), None, "", attempt + 1
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
    if self.send_top_k and p.top_k:
      body["top_k"] = p.top_k
    body.update(self.extra_body)
    return body

  def _chat_one(self, messages, p: SamplingParams) -> Completion:
    start = time.perf_counter()
    data, code, detail, attempts = self._post("/chat/completions", self._chat_body(messages, p))
    latency = time.perf_counter() - start
    if code is not None:
      return failed(code, detail, latency, attempts)
    try:
      choice = data["choices"][0]
      text = choice["message"]["content"] or ""
      usage = data.get("usage") or {}
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
