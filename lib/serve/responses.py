"""OpenAI response bodies and stream chunks for the server's answers.

Chat: `chat.completion` objects and, for `stream=true`, `chat.completion.chunk` events (a role
delta, a content delta per choice, a final delta with `finish_reason`, then a usage-only chunk when
`stream_options.include_usage`). Text completions: `text_completion` objects in both cases, with
the legacy `logprobs` block. Log-probs follow the API: chat `{"content": [{"token", "logprob",
"bytes", "top_logprobs"}]}`; completions `{"tokens", "token_logprobs", "top_logprobs",
"text_offset"}`.
"""
import base64
import time
from typing import Callable

import numpy as np

from lib.serve import tool_calls
from lib.serve.admission import GenerationRequest
from lib.serve.engine import Choice, Generation

TokenText = Callable[[int], str]


def usage(gen: Generation) -> dict:
  """The OpenAI `usage` object of a generation.

  Args:
    gen: the answered Generation.
  Returns:
    {"prompt_tokens", "completion_tokens", "total_tokens"}; total is None when either count is.
  """
  total = None if None in (gen.prompt_tokens, gen.completion_tokens) else \
      gen.prompt_tokens + gen.completion_tokens
  return {"prompt_tokens": gen.prompt_tokens, "completion_tokens": gen.completion_tokens,
          "total_tokens": total}


def _entry(token_text: TokenText, token_id: int, logprob: float) -> dict:
  text = token_text(token_id)
  return {"token": text, "logprob": logprob, "bytes": list(text.encode("utf-8"))}


def chat_logprobs(choice: Choice, token_text: TokenText) -> dict | None:
  """A choice's chat-API `logprobs` block.

  Args:
    choice: the sampled Choice (logprobs and top_logprobs per token, or None).
    token_text: token id -> its text.
  Returns:
    {"content": [{"token", "logprob", "bytes", "top_logprobs"}] per token, "refusal": None},
    or None when the choice has no log-probs.
  """
  if choice.logprobs is None:
    return None
  return {"content": [
      {**_entry(token_text, t, lp),
       "top_logprobs": [_entry(token_text, a, alp) for a, alp in choice.top_logprobs[i]]}
      for i, (t, lp) in enumerate(zip(choice.token_ids, choice.logprobs))], "refusal": None}


def token_namer(token_text: TokenText, as_ids: bool) -> TokenText:
  """How log-prob entries name a token: its text, or "token_id:<id>" (vLLM's
  return_tokens_as_token_ids, which round-trips tokens that are not whole characters).

  Args:
    token_text: token id -> its text.
    as_ids: name tokens by id.
  Returns:
    token id -> its name.
  """
  return (lambda t: f"token_id:{t}") if as_ids else token_text


def completion_logprobs(choice: Choice, token_text: TokenText) -> dict | None:
  """A choice's legacy completions-API `logprobs` block; with echo the prompt's tokens come
  first (the first one's log-prob and alternatives are null: it has no context).

  Args:
    choice: the sampled Choice (logprobs and top_logprobs per token, or None).
    token_text: token id -> its text.
  Returns:
    {"tokens", "token_logprobs", "text_offset" (character offset of each token in the returned
    text), "top_logprobs" ({text: log-prob} per token)}, or None without log-probs.
  """
  if choice.logprobs is None:
    return None
  ids, lps, tops = list(choice.token_ids), list(choice.logprobs), list(choice.top_logprobs)
  if choice.prompt_logprobs is not None:
    ids = choice.prompt_token_ids + ids
    lps = choice.prompt_logprobs + lps
    tops = choice.prompt_top_logprobs + tops
  tokens = [token_text(t) for t in ids]
  offsets = [sum(len(x) for x in tokens[:i]) for i in range(len(tokens))]
  return {"tokens": tokens, "token_logprobs": lps, "text_offset": offsets,
          "top_logprobs": [None if top is None else {token_text(a): alp for a, alp in top}
                           for top in tops]}


def _token_ids(request: GenerationRequest | None, choice: Choice) -> dict:
  """vLLM's return_token_ids fields of a choice: prompt_token_ids and token_ids."""
  if request is None or not request.return_token_ids:
    return {}
  return {"prompt_token_ids": choice.prompt_token_ids, "token_ids": list(choice.token_ids)}


def chat_message(request: GenerationRequest | None, choice: Choice) -> tuple[dict, str]:
  """A chat choice's `message` and finish_reason; with tools, generated <tool_call> blocks
  become `tool_calls` (finish_reason "tool_calls") and the rest of the text the content.

  Args:
    request: the parsed request (its tools), if any.
    choice: the sampled Choice.
  """
  if request is None or request.tools is None or not request.tools.parses:
    return {"role": "assistant", "content": choice.text}, choice.finish_reason
  content, calls = tool_calls.split_tool_calls(choice.text, request.tools.names)
  message = {"role": "assistant", "content": content}
  if not calls:
    return message, choice.finish_reason
  return {**message, "tool_calls": calls}, "tool_calls"


def _head(request_id: str, obj: str, model: str) -> dict:
  return {"id": request_id, "object": obj, "created": int(time.time()), "model": model}


def chat_response(request_id: str, model: str, gen: Generation, token_text: TokenText,
                  request: GenerationRequest | None = None) -> dict:
  """The non-streamed `chat.completion` body.

  Args:
    request_id: the job's id (the body's id is `chatcmpl-<request_id>`).
    model: the served model name.
    gen: the answered Generation (one choice per `n`).
    token_text: token id -> its text, for log-probs.
    request: the parsed request (its return_token_ids / tokens_as_ids options), if any.
  Returns:
    The response dict: id, object, created, model, choices (message, logprobs, finish_reason),
    usage.
  """
  name = token_namer(token_text, request is not None and request.tokens_as_ids)
  return {**_head(f"chatcmpl-{request_id}", "chat.completion", model),
          "choices": [{"index": i, "message": message, "logprobs": chat_logprobs(c, name),
                       "finish_reason": reason, **_token_ids(request, c)}
                      for i, c in enumerate(gen.choices)
                      for message, reason in [chat_message(request, c)]],
          # vLLM sends a chat reply's prompt ids at the top level (one prompt per chat request)
          **({"prompt_token_ids": gen.choices[0].prompt_token_ids} if gen.choices and
             _token_ids(request, gen.choices[0]) else {}),
          "usage": usage(gen)}


def completion_response(request_id: str, model: str, gen: Generation,
                        token_text: TokenText, request: GenerationRequest | None = None) -> dict:
  """The `text_completion` body (see `chat_response`; choices carry `text` -- after the prompt
  with echo -- and legacy logprobs).

  Args:
    request_id: the job's id (the body's id is `cmpl-<request_id>`).
    model: the served model name.
    gen: the answered Generation.
    token_text: token id -> its text, for log-probs.
    request: the parsed request (return_token_ids / tokens_as_ids), if any.
  Returns:
    The response dict: id, object, created, model, choices, usage.
  """
  name = token_namer(token_text, request is not None and request.tokens_as_ids)
  return {**_head(f"cmpl-{request_id}", "text_completion", model),
          "choices": [{"index": i, "text": (c.prompt_text or "") + c.text,
                       "logprobs": completion_logprobs(c, name),
                       "finish_reason": c.finish_reason, **_token_ids(request, c)}
                      for i, c in enumerate(gen.choices)],
          "usage": usage(gen)}


class StreamFormat:
  """Stream events of one request: `start()` (chat: a role delta per choice), `delta(i, text)`
  while decoding, `end(gen, sent)` (the rest of each choice's text with its log-probs, the
  finish_reason chunks, the usage chunk when `stream_options.include_usage`)."""

  def __init__(self, requests: list[GenerationRequest], request_id: str, model: str,
               token_text: TokenText):
    # One request per prompt; they share every option, and their choices are numbered on.
    request = requests[0]
    self.request, self.choices = request, sum(r.n for r in requests)
    self.token_text = token_namer(token_text, request.tokens_as_ids)
    self.chat = request.kind == "chat"
    self.head = (_head(f"chatcmpl-{request_id}", "chat.completion.chunk", model) if self.chat
                 else _head(f"cmpl-{request_id}", "text_completion", model))
    self.with_usage = {"usage": None} if request.include_usage else {}

  def _chunk(self, i: int, text: str | None, reason: str | None = None, lp=None,
             calls: list | None = None) -> dict:
    if self.chat:
      delta = {} if text is None else {"content": text}
      if calls:  # whole calls in one delta, indexed as the SDK's stream accumulator expects
        delta["tool_calls"] = [{"index": k, **c} for k, c in enumerate(calls)]
      choice = {"index": i, "delta": delta, "logprobs": lp, "finish_reason": reason}
    else:
      choice = {"index": i, "text": text or "", "logprobs": lp, "finish_reason": reason}
    return {**self.head, "choices": [choice], **self.with_usage}

  def start(self) -> list[dict]:
    """The opening chunks: chat, one role delta per choice; completions, none."""
    if not self.chat:
      return []
    return [{**self.head, "choices": [{"index": i, "delta": {"role": "assistant", "content": ""},
                                       "logprobs": None, "finish_reason": None}],
             **self.with_usage} for i in range(self.choices)]

  def delta(self, i: int, text: str) -> dict:
    """A stream chunk with new text of one choice (no log-probs, no finish_reason).

    Args:
      i: the choice index.
      text: the newly decoded, final text of that choice.
    Returns:
      The chunk dict.
    """
    return self._chunk(i, text)

  def end(self, gen: Generation, sent: list[str]) -> list[dict]:
    """The closing chunks of the stream.

    Args:
      gen: the answered Generation.
      sent: sent[i], the text already streamed for choice i (a prefix of its final text).
    Returns:
      Per choice, the unsent rest of its text with its log-probs (if any) and a finish_reason
      chunk; then a usage-only chunk when `include_usage`.
    """
    out = []
    for i, c in enumerate(gen.choices):
      message, reason = chat_message(self.request, c) if self.chat else ({}, c.finish_reason)
      text = (message.get("content") or "") if self.chat else c.text
      rest = text[len(sent[i]):] if text.startswith(sent[i]) else ""
      lp = (chat_logprobs if self.chat else completion_logprobs)(c, self.token_text)
      if rest or lp is not None or message.get("tool_calls"):
        out.append(self._chunk(i, rest, lp=lp, calls=message.get("tool_calls")))
      out.append(self._chunk(i, None if self.chat else "", reason))
    if self.request.include_usage:
      out.append({**self.head, "choices": [], "usage": usage(gen)})
    return out


def embeddings_response(model: str, vectors, prompt_tokens: int | None,
                        encoding: str = "float") -> dict:
  """The `/v1/embeddings` body.

  Args:
    model: the served model name.
    vectors: [N, D] embeddings (any float array-like).
    prompt_tokens: tokens of the inputs, or None when not counted.
    encoding: "float" (lists of float32) or "base64" (little-endian float32 bytes, the SDK's
      default).
  Returns:
    {"object": "list", "model", "data": [{"object", "index", "embedding"}], "usage"}.
  """
  encode = ((lambda v: base64.b64encode(np.asarray(v, "<f4").tobytes()).decode())
            if encoding == "base64" else (lambda v: np.asarray(v, np.float32).tolist()))
  return {"object": "list", "model": model,
          "data": [{"object": "embedding", "index": i, "embedding": encode(v)}
                   for i, v in enumerate(vectors)],
          "usage": {"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens}}


def model_card(model: str, created: int) -> dict:
  """The `/v1/models` entry of a model, owned by "accord".

  Args:
    model: the served model name.
    created: epoch seconds.
  Returns:
    {"id", "object": "model", "created", "owned_by"}.
  """
  return {"id": model, "object": "model", "created": created, "owned_by": "accord"}
