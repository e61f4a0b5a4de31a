"""`POST /v1/responses` (the OpenAI SDK's newer default API), without streaming or tools: text or
message input, `instructions`, `max_output_tokens`, sampling settings; the answer's message holds
one `output_text` part, which the SDK's `response.output_text` reads.

A request becomes a chat GenerationRequest of kind "response" (rendered with the chat template
like chat completions), so it shares the sampler's batches with every other request.
"""
import time

from lib.serve.admission import (GenerationRequest, RequestError, ServerLimits, check_model,
                                      parse_chat)
from lib.serve.engine import Generation

FIELDS = {"model", "input", "instructions", "max_output_tokens", "temperature", "top_p", "stream",
          "store", "user", "metadata", "text", "truncation"}


def _messages(value) -> list[dict]:
  if isinstance(value, str):
    return [{"role": "user", "content": value}]
  if not isinstance(value, list) or not value:
    raise RequestError(400, "input must be a string or a non-empty list of messages",
                       param="input")
  out = []
  for i, m in enumerate(value):
    if not isinstance(m, dict) or m.get("type", "message") != "message":
      raise RequestError(400, f"input[{i}]: only messages are supported (no tool or reasoning "
                              "items)", param="input")
    content = m.get("content")
    if isinstance(content, list):  # input_text / output_text parts -> the chat API's text parts
      if not all(isinstance(p, dict) and p.get("type") in ("input_text", "output_text")
                 for p in content):
        raise RequestError(400, f"input[{i}].content: only input_text/output_text parts are "
                                "supported", param="input")
      content = [{"type": "text", "text": p.get("text")} for p in content]
    out.append({"role": m.get("role"), "content": content})
  return out


def parse_response(body, model_name: str, limits: ServerLimits) -> GenerationRequest:
  """Validates a /v1/responses body.

  Args:
    body: the decoded JSON.
    model_name: the served model's id (a body naming another gets 404).
    limits: as for chat completions.
  Returns:
    A GenerationRequest of kind "response" (a conversation; prompt_ids not yet set).
  Raises:
    RequestError: 400 naming the field, 404 for another model.
  """
  if not isinstance(body, dict):
    raise RequestError(400, "request body must be a JSON object")
  check_model(body, model_name)
  bad = sorted(set(body) - FIELDS)
  if body.get("stream"):
    bad.append("stream")
  if body.get("text") not in (None, {"format": {"type": "text"}}):
    bad.append("text")
  if bad:
    raise RequestError(400, f"unsupported field(s) {', '.join(bad)} on /v1/responses (no "
                            "streaming, tools or structured output here; /v1/chat/completions "
                            "streams)", param=bad[0])
  messages = _messages(body.get("input"))
  instructions = body.get("instructions")
  if instructions is not None:
    if not isinstance(instructions, str):
      raise RequestError(400, "instructions must be a string", param="instructions")
    messages = [{"role": "system", "content": instructions}] + messages
  chat = {"messages": messages, "max_tokens": body.get("max_output_tokens")}
  chat.update({k: body[k] for k in ("temperature", "top_p") if k in body})
  request = parse_chat(chat, model_name, limits)
  request.kind = "response"
  return request


def response_body(request_id: str, model: str, gen: Generation) -> dict:
  """The `response` object of an answered request.

  Args:
    request_id: the job's id (the body's id is `resp_<request_id>`).
    model: the served model name.
    gen: the Generation (one choice).
  Returns:
    {"id", "object": "response", "created_at", "status", "model", "output": [one assistant
    message with an output_text part], "usage", ...}; status "incomplete" when max_output_tokens
    cut the text.
  """
  (choice,) = gen.choices
  cut = choice.finish_reason == "length"
  return {"id": f"resp_{request_id}", "object": "response", "created_at": int(time.time()),
          "status": "incomplete" if cut else "completed",
          "incomplete_details": {"reason": "max_output_tokens"} if cut else None,
          "error": None, "model": model,
          "output": [{"type": "message", "id": f"msg_{request_id}", "role": "assistant",
                      "status": "incomplete" if cut else "completed",
                      "content": [{"type": "output_text", "text": choice.text,
                                   "annotations": []}]}],
          "parallel_tool_calls": False, "tool_choice": "none", "tools": [],
          "usage": {"input_tokens": gen.prompt_tokens, "output_tokens": gen.completion_tokens,
                    "total_tokens": (None if None in (gen.prompt_tokens, gen.completion_tokens)
                                     else gen.prompt_tokens + gen.completion_tokens),
                    "input_tokens_details": {"cached_tokens": 0},
                    "output_tokens_details": {"reasoning_tokens": 0}}}
