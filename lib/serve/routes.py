"""What each POST route does with a decoded body, between the HTTP transport (httpd.py) and the
model worker: validate and admit a generation or embeddings request as a worker `Job`, build the
finished job's response body, and answer /tokenize, /detokenize and /tokenizer_info (vLLM's
token-in/token-out endpoints; lm-evaluation-harness tokenizes through them) on the connection's
thread, without the worker.
"""
from lib.serve import responses, responses_api, tool_calls
from lib.serve.admission import (GenerationRequest, RequestError, ServerLimits, admit,
                                      check_model, parse_chat, parse_completion,
                                      parse_embeddings)
from lib.serve.engine import Engine
from lib.serve.worker import Job

GENERATION_ROUTES = ("/v1/chat/completions", "/v1/completions", "/v1/responses",
                     "/v1/embeddings")
TOKEN_ROUTES = ("/tokenize", "/detokenize")
WEIGHT_ROUTES = ("/update_weights_from_disk",)  # OpenAIServer(weight_updates=True): weights.py
POST_ROUTES = GENERATION_ROUTES + TOKEN_ROUTES + WEIGHT_ROUTES
GET_ROUTES = ("/v1/models", "/v1/models/{id}", "/tokenizer_info", "/health")


def no_route(method: str, path: str) -> RequestError:
  """The 404 for a route this server does not have, listing the ones it has (so a client of
  /v1/responses, say, learns what to call instead)."""
  return RequestError(404, f"no route {method} {path}; this server has POST "
                           f"{', '.join(POST_ROUTES)} and GET {', '.join(GET_ROUTES)}",
                      "not_found")


def prepare(engine: Engine, model_name: str, limits: ServerLimits, route: str, body) -> Job:
  """Validates and admits a generation or embeddings request.

  Args:
    engine: the server's engine. model_name: the served model's id. limits: the server's limits.
    route: one of GENERATION_ROUTES.
    body: the decoded JSON body.
  Returns:
    A Job for the worker: embeddings, or generation with one GenerationRequest per prompt (each
    tokenised and checked against the limits).
  Raises:
    RequestError: the 4xx to answer with.
  """
  if route == "/v1/embeddings":
    return Job("embed", parse_embeddings(body, model_name, limits), 1, limits.request_timeout_s)
  if route == "/v1/completions" and not engine.supports_completions:
    raise RequestError(404, "this backend serves chat completions only", "not_found")
  if route == "/v1/completions":
    requests = parse_completion(body, model_name, limits)
  elif route == "/v1/responses":
    requests = [responses_api.parse_response(body, model_name, limits)]
  else:
    requests = [parse_chat(body, model_name, limits)]
  for request in requests:
    if (request.logprobs or request.echo or request.return_token_ids
        or request.tokens_as_ids) and not engine.supports_logprobs:
      raise RequestError(400, "token-level output (logprobs, echo, token ids) is not available "
                              "from this backend", param="logprobs")
    if request.echo and request.stream:
      raise RequestError(400, "echo cannot be streamed by this server; send stream=false",
                         param="echo")
    request.prompt_ids = engine.prompt_ids(request)
    if request.prompt_ids is not None:
      admit(request, len(request.prompt_ids), limits)
    if request.regex is not None:  # RequestError 400 if it cannot compile or is too large
      engine.compile_constraint(request)
  return Job("generate", requests, sum(r.n for r in requests), limits.request_timeout_s)


def answer(engine: Engine, model_name: str, job: Job) -> dict:
  """The response body of a finished non-stream job.

  Args:
    engine: the server's engine (token texts, token counts). model_name: the served model's id.
    job: a done Job.
  Returns:
    The chat, completion or embeddings response dict.
  Raises:
    Exception: the job's error, if it failed.
  """
  if job.error is not None:
    raise job.error
  if job.kind == "embed":
    texts, encoding = job.payload
    return responses.embeddings_response(model_name, job.result, engine.count_tokens(texts),
                                         encoding)
  request = job.payload[0]  # the options every prompt of the request shares
  if request.kind == "response":
    return responses_api.response_body(job.request_id, model_name, job.result)
  build = responses.chat_response if request.kind == "chat" else responses.completion_response
  return build(job.request_id, model_name, job.result, engine.token_text, request)


def tokens(engine: Engine, model_name: str, limits: ServerLimits, route: str, body) -> dict:
  """/tokenize and /detokenize, as vLLM serves them.

  /tokenize: {"prompt": str, "add_special_tokens": bool = true} or {"messages": [...],
  "add_generation_prompt": bool = true} (rendered with the chat template) ->
  {"count", "max_model_len", "tokens"}. /detokenize: {"tokens": [ids]} -> {"prompt": str}.

  Args:
    engine: the server's engine (its tokenizer). model_name: the served model's id.
    limits: context_length is reported as max_model_len.
    route: "/tokenize" or "/detokenize".
    body: the decoded JSON body.
  Returns:
    The response dict.
  Raises:
    RequestError: 400 naming the field, 404 for a backend without a tokenizer or another model.
  """
  tokenizer = getattr(engine, "tokenizer", None)
  if tokenizer is None:
    raise RequestError(404, f"{route}: this backend has no tokenizer", "not_found")
  if not isinstance(body, dict):
    raise RequestError(400, "request body must be a JSON object")
  check_model(body, model_name)
  known = ({"model", "tokens"} if route == "/detokenize" else
           {"model", "prompt", "messages", "add_special_tokens", "add_generation_prompt"})
  extra = sorted(set(body) - known)
  if extra:
    raise RequestError(400, f"unsupported field(s) {', '.join(extra)} for {route}",
                       param=extra[0])
  if route == "/detokenize":
    ids = body.get("tokens")
    if not isinstance(ids, list) or not all(isinstance(t, int) and not isinstance(t, bool)
                                            and 0 <= t < len(tokenizer) for t in ids):
      raise RequestError(400, f"tokens must be a list of token ids in [0, {len(tokenizer)})",
                         param="tokens")
    return {"prompt": tokenizer.decode(ids)}
  flags = {f: body.get(f, True) for f in ("add_special_tokens", "add_generation_prompt")}
  for f, v in flags.items():
    if not isinstance(v, bool):
      raise RequestError(400, f"{f} must be a boolean", param=f)
  if ("prompt" in body) == ("messages" in body):
    raise RequestError(400, "give exactly one of prompt (a string) or messages", param="prompt")
  if "prompt" in body:
    if not isinstance(body["prompt"], str):
      raise RequestError(400, "prompt must be a string", param="prompt")
    ids = tokenizer.encode(body["prompt"], add_special_tokens=flags["add_special_tokens"])
  else:
    chat = parse_chat({"messages": body["messages"]}, model_name, limits)
    text = tool_calls.chat_text(tokenizer, chat.prompt, None, engine.backend.template_kwargs,
                                flags["add_generation_prompt"])
    ids = tokenizer.encode(text, add_special_tokens=False)
  return {"count": len(ids), "max_model_len": limits.context_length, "tokens": ids}


def tokenizer_info(engine: Engine) -> dict:
  """GET /tokenizer_info, as vLLM serves it: the special tokens and the chat template.

  Args:
    engine: the server's engine (its tokenizer).
  Returns:
    {"tokenizer_class", "eos_token", "bos_token", "pad_token", "chat_template",
    "model_max_length"}.
  Raises:
    RequestError: 404 for a backend without a tokenizer.
  """
  tokenizer = getattr(engine, "tokenizer", None)
  if tokenizer is None:
    raise RequestError(404, "/tokenizer_info: this backend has no tokenizer", "not_found")
  return {"tokenizer_class": type(tokenizer).__name__, "eos_token": tokenizer.eos_token,
          "bos_token": tokenizer.bos_token, "pad_token": tokenizer.pad_token,
          "chat_template": tokenizer.chat_template, "model_max_length": engine.context_length}


__all__ = ["GenerationRequest", "answer", "no_route", "prepare", "tokenizer_info", "tokens"]
