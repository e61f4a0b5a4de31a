"""Admission control for the OpenAI-compatible server: parse and validate request bodies, and
refuse anything over a limit before it reaches the model.

Every refusal is a `RequestError` carrying the HTTP status and a message that names the field or
the limit (and how to raise it), so a client sees at once why it was turned away. Fields this
server cannot honour (penalties, logit_bias, legacy functions, grammars, ...) are refused by
name, never silently ignored; so are fields it does not know. Tools (tool_calls.py) and
structured output (structured.py) are parsed into the request.
"""
import dataclasses
import math
from typing import Callable

from lib.backends.protocol import ROLES, SamplingParams
from lib.serve import structured, tool_calls
from lib.serve.errors import RequestError

MAX_TOP_LOGPROBS = 20  # OpenAI's own cap on top_logprobs
MAX_STOP_STRINGS = 4
# Newer OpenAI clients send the system turn as role "developer"; chat templates (Qwen's, our
# ChatML) and the backends know only ROLES, so it is rendered as the system turn.
ROLE_ALIASES = {"developer": "system"}


@dataclasses.dataclass(frozen=True)
class ServerLimits:
  """What one request and the server as a whole may ask for (configs/serve.py `limits`).

  context_length: the model's (prompt + new tokens per row); None when the backend has none.
  max_prompt_tokens / max_new_tokens: per request. max_batch: rows (requests x n) per sampler
  batch; also the largest `n`. max_queue: waiting requests before new ones get 503.
  request_timeout_s: a request still unanswered after this long is cancelled (504).
  socket_timeout_s: idle or half-sent connections are closed after this long.
  stuck_after_s: /health fails when the model worker made no progress for this long.
  max_body_bytes: request bodies above this get 413. max_embed_inputs: texts per embeddings call.
  max_constraint_cells: states x token classes of one structured-output table
    (lib/generate/token_dfa.py).
  """
  context_length: int | None = None
  max_prompt_tokens: int = 4096
  max_new_tokens: int = 1024
  max_batch: int = 32
  max_queue: int = 256
  request_timeout_s: float = 600.0
  socket_timeout_s: float = 30.0
  stuck_after_s: float = 120.0
  max_body_bytes: int = 8 << 20
  max_embed_inputs: int = 256
  max_constraint_cells: int = 1 << 25


@dataclasses.dataclass
class GenerationRequest:
  """One validated chat or text-completion request.

  prompt: a conversation (list of {"role", "content"} dicts) for chat, a string for completions.
  n: choices, sampled as n rows of one batch. logprobs: return each token's log-prob;
  top_logprobs: and that many alternatives per token. prompt_ids: the prompt's token ids (given
  by the client, or filled in by admission). echo: completions only, the prompt is returned
  before the completion, with its tokens' log-probs when logprobs are asked; score_only: echo
  with max_tokens=0 (nothing is sampled). return_token_ids: prompt and completion ids in each
  choice (vLLM's field). tokens_as_ids: log-prob entries name tokens "token_id:<id>" (vLLM's
  return_tokens_as_token_ids). on_text: for streams, called as on_text(choice index, new text)
  between decode chunks with text that is final (a prefix of the choice's text).
  """
  kind: str  # "chat" | "completion" | "response" (/v1/responses: a conversation, like chat)
  prompt: list | str
  params: SamplingParams
  n: int = 1
  logprobs: bool = False
  top_logprobs: int = 0
  stream: bool = False
  include_usage: bool = False
  prompt_ids: list[int] | None = None
  echo: bool = False
  score_only: bool = False
  return_token_ids: bool = False
  tokens_as_ids: bool = False
  on_text: Callable[[int, str], None] | None = None
  regex: str | None = None  # the output must match it (structured output or a forced tool call)
  regex_field: str | None = None  # the field the regex came from, for error messages
  constraint: object = None  # regex compiled by the engine (lib.generate.token_dfa.TokenDFA)
  tools: tool_calls.ToolSpec | None = None  # chat: declared tools and tool_choice


_COMMON = {"model", "max_tokens", "temperature", "top_p", "top_k", "stop", "seed", "n", "stream",
           "stream_options", "logprobs", "user", "presence_penalty", "frequency_penalty",
           "logit_bias", "return_token_ids", "return_tokens_as_token_ids", *structured.FIELDS}
CHAT_FIELDS = _COMMON | {"messages", "max_completion_tokens", "top_logprobs", "tools",
                         "tool_choice", "functions", "function_call", "parallel_tool_calls"}
COMPLETION_FIELDS = _COMMON | {"prompt", "echo", "best_of", "suffix"}


def check_model(body: dict, model_name: str) -> None:
  """Refuses a body that names a model other than the served one.

  Args:
    body: the decoded JSON object; a missing or null "model" is accepted.
    model_name: the served model's id.
  Raises:
    RequestError: 404 (model_not_found) for another model.
  """
  model = body.get("model")
  if model is not None and model != model_name:
    raise RequestError(404, f"model {model!r} not found; this server serves {model_name!r}",
                       "model_not_found", "model")


def _require_object(body) -> dict:
  if not isinstance(body, dict):
    raise RequestError(400, "request body must be a JSON object")
  return body


def _unsupported(body: dict, known: set[str]) -> None:
  """400 naming every field this server would otherwise have to ignore."""
  bad = sorted(set(body) - known)
  set_to = lambda f, default: f in body and body[f] not in default
  bad += [f for f in ("presence_penalty", "frequency_penalty") if set_to(f, (None, 0, 0.0))]
  bad += [f for f in ("logit_bias", "functions") if set_to(f, (None, {}, []))]
  bad += [f for f in ("function_call",) if set_to(f, (None, "none"))]
  bad += [f for f in ("suffix",) if set_to(f, (None,))]
  bad += [f for f in ("best_of",) if set_to(f, (None, 1))]
  if bad:
    raise RequestError(400, f"unsupported field(s) {', '.join(bad)}: this server cannot honour "
                            "them (penalties, logit_bias and the legacy functions API are not "
                            "implemented; use tools)", param=bad[0])


def _number(body: dict, field: str, default: float, lo: float, hi: float,
            lo_open: bool = False) -> float:
  value = body.get(field)
  if value is None:
    return default
  if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
    raise RequestError(400, f"{field} must be a finite number, got {value!r}", param=field)
  if value < lo or value > hi or (lo_open and value == lo):
    bracket = "(" if lo_open else "["
    raise RequestError(400, f"{field} must be in {bracket}{lo}, {hi}], got {value!r}", param=field)
  return float(value)


def _integer(body: dict, field: str, default: int | None, lo: int, hi: int) -> int | None:
  value = body.get(field)
  if value is None:
    return default
  if isinstance(value, bool) or not isinstance(value, int):
    raise RequestError(400, f"{field} must be an integer, got {value!r}", param=field)
  if not lo <= value <= hi:
    raise RequestError(400, f"{field} must be in [{lo}, {hi}], got {value}", param=field)
  return value


def _sampling(body: dict, limits: ServerLimits, max_tokens_field,
              allow_zero: bool = False) -> SamplingParams:
  max_tokens = _integer(body, max_tokens_field, None, 0 if allow_zero else 1, 2**62)
  if max_tokens == 0:
    max_tokens = 1  # score only: the caller samples nothing (GenerationRequest.score_only)
  elif max_tokens is None:
    max_tokens = min(256, limits.max_new_tokens)
  elif max_tokens > limits.max_new_tokens:
    raise RequestError(400, f"{max_tokens_field}={max_tokens} exceeds this server's "
                            f"max_new_tokens limit of {limits.max_new_tokens} (set "
                            "limits.max_new_tokens in configs/serve.py)", param=max_tokens_field)
  top_k = _integer(body, "top_k", 0, -1, 2**31 - 1)
  stop = body.get("stop")
  stop = [] if stop is None else [stop] if isinstance(stop, str) else stop
  if (not isinstance(stop, list) or len(stop) > MAX_STOP_STRINGS
      or not all(isinstance(s, str) and s for s in stop)):
    raise RequestError(400, f"stop must be a non-empty string or a list of at most "
                            f"{MAX_STOP_STRINGS} non-empty strings", param="stop")
  return SamplingParams(
      max_tokens=max_tokens, temperature=_number(body, "temperature", 1.0, 0.0, 2.0),
      top_p=_number(body, "top_p", 1.0, 0.0, 1.0, lo_open=True),
      top_k=max(0, top_k),  # -1 (vLLM's "off") and 0 both mean no top-k filter
      stop=tuple(stop), seed=_integer(body, "seed", None, -2**63, 2**64 - 1))


def _stream_fields(body: dict) -> tuple[bool, bool]:
  stream = body.get("stream") or False
  if not isinstance(stream, bool):
    raise RequestError(400, "stream must be a boolean", param="stream")
  options = body.get("stream_options") or {}
  if not isinstance(options, dict) or set(options) - {"include_usage"}:
    raise RequestError(400, "stream_options may only hold include_usage", param="stream_options")
  if options and not stream:
    raise RequestError(400, "stream_options needs stream=true", param="stream_options")
  return stream, bool(options.get("include_usage"))


def message_text(content, index: int) -> str:
  """A message's content as one string.

  Args:
    content: a string, or a list of {"type": "text", "text": str} parts (joined without a
      separator).
    index: the message's position in `messages`, for the error text.
  Returns:
    The text.
  Raises:
    RequestError: 400 for non-text parts or any other type.
  """
  if isinstance(content, str):
    return content
  if isinstance(content, list) and all(isinstance(p, dict) for p in content):
    if all(p.get("type") == "text" and isinstance(p.get("text"), str) for p in content):
      return "".join(p["text"] for p in content)
    kinds = sorted({str(p.get("type")) for p in content} - {"text"})
    raise RequestError(400, f"messages[{index}].content: only text parts are supported, got "
                            f"{kinds or 'a text part without a string text'}", param="messages")
  raise RequestError(400, f"messages[{index}].content must be a string or a list of text parts",
                     param="messages")


def parse_chat(body, model_name: str, limits: ServerLimits) -> GenerationRequest:
  """Validates a /v1/chat/completions body.

  Args:
    body: the decoded JSON.
    model_name: the served model's id (a body naming another gets 404).
    limits: max_new_tokens and max_batch (the largest n) apply here.
  Returns:
    GenerationRequest of kind "chat" (prompt_ids not yet set).
  Raises:
    RequestError: 400 naming the field or limit, 404 for another model.
  """
  body = _require_object(body)
  check_model(body, model_name)
  _unsupported(body, CHAT_FIELDS)
  messages = body.get("messages")
  if not isinstance(messages, list) or not messages:
    raise RequestError(400, "messages must be a non-empty list", param="messages")
  conv = []
  for i, m in enumerate(messages):
    role = m.get("role") if isinstance(m, dict) else None
    role = ROLE_ALIASES.get(role, role) if isinstance(role, str) else None
    if role not in ROLES:
      raise RequestError(400, f"messages[{i}] needs a role in {ROLES + tuple(ROLE_ALIASES)}",
                         param="messages")
    calls = m.get("tool_calls") if role == "assistant" else None
    if calls is not None and not isinstance(calls, list):
      raise RequestError(400, f"messages[{i}].tool_calls must be a list", param="messages")
    content = m.get("content")
    conv.append({"role": role, "content": "" if content is None and calls else
                 message_text(content, i), **({"tool_calls": calls} if calls else {})})
  tool_calls.hf_messages(conv)  # 400 for a tool call without a name or with non-JSON arguments
  max_field = "max_completion_tokens" if body.get("max_completion_tokens") is not None \
      else "max_tokens"
  logprobs = body.get("logprobs") or False
  if not isinstance(logprobs, bool):
    raise RequestError(400, "logprobs must be a boolean for chat completions", param="logprobs")
  top = _integer(body, "top_logprobs", 0, 0, MAX_TOP_LOGPROBS)
  if top and not logprobs:
    raise RequestError(400, "top_logprobs needs logprobs=true", param="top_logprobs")
  stream, usage = _stream_fields(body)
  tools = tool_calls.parse_tools(body)
  regex, field = structured.output_regex(body)
  forced = tool_calls.forced_regex(tools) if tools is not None else None
  if forced is not None and regex is not None:
    raise RequestError(400, f"tool_choice {tools.choice!r} and {field} both constrain the "
                            "output; give one", param=field)
  return GenerationRequest("chat", conv, _sampling(body, limits, max_field),
                           n=_integer(body, "n", 1, 1, limits.max_batch), logprobs=logprobs,
                           top_logprobs=top, stream=stream, include_usage=usage,
                           regex=forced or regex, regex_field=field or "tool_choice",
                           tools=tools, **_token_id_fields(body))


def _flag(body: dict, field: str) -> bool:
  value = body.get(field)
  if value is not None and not isinstance(value, bool):
    raise RequestError(400, f"{field} must be a boolean", param=field)
  return bool(value)


def _token_id_fields(body: dict) -> dict:
  return {"return_token_ids": _flag(body, "return_token_ids"),
          "tokens_as_ids": _flag(body, "return_tokens_as_token_ids")}


def _is_ids(x) -> bool:
  return isinstance(x, list) and bool(x) and all(
      isinstance(t, int) and not isinstance(t, bool) and t >= 0 for t in x)


def completion_prompts(prompt) -> list[str | list[int]]:
  """The prompts of a /v1/completions body, as the API allows them.

  Args:
    prompt: a string, a list of strings, a list of token ids, or a list of lists of token ids.
  Returns:
    One entry per prompt: a string or a list of token ids.
  Raises:
    RequestError: 400 for an empty prompt or any other shape.
  """
  if isinstance(prompt, str):
    prompts = [prompt]
  elif _is_ids(prompt):
    prompts = [prompt]
  elif isinstance(prompt, list) and prompt and all(isinstance(p, str) or _is_ids(p)
                                                   for p in prompt):
    prompts = prompt
  else:
    raise RequestError(400, "prompt must be a string, a list of strings, a list of token ids or "
                            "a list of lists of token ids (all non-empty, ids >= 0)",
                       param="prompt")
  if any(p == "" for p in prompts):
    raise RequestError(400, "prompt must not be an empty string", param="prompt")
  return prompts


def parse_completion(body, model_name: str, limits: ServerLimits) -> list[GenerationRequest]:
  """Validates a /v1/completions body; as `parse_chat`, one request per prompt.

  Args:
    body: the decoded JSON; "prompt" as `completion_prompts` accepts it; `echo` returns the
      prompt (with its log-probs when `logprobs` is set), and `max_tokens=0` is allowed with it.
    model_name: the served model's id (a body naming another gets 404).
    limits: max_new_tokens and max_batch (the largest n, and the most prompts x n) apply here.
  Returns:
    GenerationRequests of kind "completion", in prompt order (token-id prompts carry their
    prompt_ids); legacy `logprobs=K` becomes top_logprobs K.
  """
  body = _require_object(body)
  check_model(body, model_name)
  _unsupported(body, COMPLETION_FIELDS)
  prompts = completion_prompts(body.get("prompt"))
  echo = _flag(body, "echo")
  top = _integer(body, "logprobs", None, 0, 5)  # the legacy API: an int, up to 5 alternatives
  stream, usage = _stream_fields(body)
  n = _integer(body, "n", 1, 1, limits.max_batch)
  if len(prompts) * n > limits.max_batch:
    raise RequestError(400, f"{len(prompts)} prompts x n={n} = {len(prompts) * n} choices exceed "
                            f"this server's max_batch limit of {limits.max_batch}",
                       param="prompt")
  params = _sampling(body, limits, "max_tokens", allow_zero=echo)
  score_only = echo and body.get("max_tokens") == 0
  if score_only and stream:
    raise RequestError(400, "max_tokens=0 (scoring) cannot stream", param="stream")
  regex, field = structured.output_regex(body)
  return [GenerationRequest("completion", p, params, n=n, logprobs=top is not None,
                            top_logprobs=top or 0, stream=stream, include_usage=usage,
                            prompt_ids=None if isinstance(p, str) else list(p), echo=echo,
                            score_only=score_only, regex=regex, regex_field=field,
                            **_token_id_fields(body))
          for p in prompts]


def parse_embeddings(body, model_name: str, limits: ServerLimits) -> tuple[list[str], str]:
  """Validates a /v1/embeddings body.

  Args:
    body: the decoded JSON; "input" is a string or a non-empty list of strings.
    model_name: the served model's id (a body naming another gets 404).
    limits: max_embed_inputs applies here.
  Returns:
    (input texts, encoding_format "float" | "base64").
  Raises:
    RequestError: 400 naming the field or limit, 404 for another model.
  """
  body = _require_object(body)
  check_model(body, model_name)
  _unsupported(body, {"model", "input", "encoding_format", "user"})
  encoding = body.get("encoding_format") or "float"
  if encoding not in ("float", "base64"):
    raise RequestError(400, "encoding_format must be 'float' or 'base64'",
                       param="encoding_format")
  texts = body.get("input")
  texts = [texts] if isinstance(texts, str) else texts
  if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
    raise RequestError(400, "input must be a string or a non-empty list of strings",
                       param="input")
  if len(texts) > limits.max_embed_inputs:
    raise RequestError(400, f"{len(texts)} inputs exceed the max_embed_inputs limit of "
                            f"{limits.max_embed_inputs}", param="input")
  return texts, encoding


def admit(request: GenerationRequest, prompt_tokens: int, limits: ServerLimits) -> None:
  """Refuses a request whose prompt or prompt + max_tokens does not fit.

  Args:
    request: a parsed request.
    prompt_tokens: its prompt's length in tokens.
    limits: max_prompt_tokens and context_length apply here.
  Raises:
    RequestError: 400 naming the limit.
  """
  if prompt_tokens > limits.max_prompt_tokens:
    raise RequestError(400, f"prompt has {prompt_tokens} tokens, over this server's "
                            f"max_prompt_tokens limit of {limits.max_prompt_tokens}",
                       param="prompt" if request.kind == "completion" else "messages")
  total = prompt_tokens + request.params.max_tokens
  if limits.context_length is not None and total > limits.context_length:
    raise RequestError(400, f"prompt ({prompt_tokens} tokens) + max_tokens "
                            f"({request.params.max_tokens}) = {total} exceeds the model's "
                            f"context length of {limits.context_length}", param="max_tokens")
