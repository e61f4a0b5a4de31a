"""Function calling in Qwen's format (Qwen2.5 / Qwen3 chat templates, vLLM's "hermes" parser).

The prompt carries the tools in the system turn (`# Tools ... <tools>{one JSON per line}</tools>`),
the model answers a call as `<tool_call>\\n{"name": ..., "arguments": {...}}\\n</tool_call>`, and
tool results come back as a user turn of `<tool_response>\\n...\\n</tool_response>` blocks.

- `parse_tools(body)`: validates `tools` / `tool_choice` / `parallel_tool_calls` -> `ToolSpec`.
- `render_messages(messages, tools)`: OpenAI messages (assistant `tool_calls`, `tool` role) as
  plain {"role", "content"} messages in that format, for templates without tool support (our
  trained ChatML tokenizers, and any `Backend`); `hf_messages` gives a template that renders
  tools itself (a real Qwen checkpoint) the messages in transformers' form.
- `split_tool_calls(text, names)`: generated text -> (content, calls). A block that is not JSON,
  lacks a name or names an unknown tool stays in the content as text.
- `forced_regex(spec)`: tool_choice "required" or a named function as a regex of exactly one call
  whose arguments follow the tool's parameter schema, enforced by the token-DFA sampler.
"""
import dataclasses
import json
import re
import uuid

from lib.generate import token_dfa
from lib.serve.errors import RequestError

QWEN_TOOLS_HEADER = (
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>")
QWEN_TOOLS_FOOTER = (
    "\n</tools>\n\nFor each function call, return a json object with function name and arguments "
    "within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, "
    "\"arguments\": <args-json-object>}\n</tool_call>")
_BLOCK = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)


@dataclasses.dataclass(frozen=True)
class ToolSpec:
  """A request's tools. tools: the OpenAI `tools` list; choice: "none" | "auto" | "required" |
  the name of the function that must be called; parallel: parallel_tool_calls."""
  tools: tuple
  choice: str
  forced_name: str | None = None
  parallel: bool = True

  @property
  def names(self) -> set[str]:
    """The declared function names."""
    return {t["function"]["name"] for t in self.tools}

  @property
  def parses(self) -> bool:
    """Whether generated <tool_call> blocks become tool_calls (not for tool_choice "none")."""
    return bool(self.tools) and self.choice != "none"


def parse_tools(body: dict) -> ToolSpec | None:
  """The `tools`, `tool_choice` and `parallel_tool_calls` of a chat body.

  Args:
    body: the decoded JSON object.
  Returns:
    A ToolSpec, or None when the body declares no tools (tool_choice then must be absent or
    "none").
  Raises:
    RequestError: 400 naming the field.
  """
  tools, choice = body.get("tools") or [], body.get("tool_choice")
  parallel = body.get("parallel_tool_calls")
  if parallel is not None and not isinstance(parallel, bool):
    raise RequestError(400, "parallel_tool_calls must be a boolean", param="parallel_tool_calls")
  if not isinstance(tools, list):
    raise RequestError(400, "tools must be a list of function tools", param="tools")
  for i, t in enumerate(tools):
    fn = t.get("function") if isinstance(t, dict) else None
    if (not isinstance(t, dict) or t.get("type") != "function" or not isinstance(fn, dict)
        or not isinstance(fn.get("name"), str) or not fn["name"]):
      raise RequestError(400, f"tools[{i}] must be {{\"type\": \"function\", \"function\": "
                              "{\"name\": str, ...}}", param="tools")
    if not isinstance(fn.get("parameters", {}), dict):
      raise RequestError(400, f"tools[{i}].function.parameters must be a JSON schema object",
                         param="tools")
  names = [t["function"]["name"] for t in tools]
  if len(set(names)) != len(names):
    raise RequestError(400, "tools: function names must be unique", param="tools")
  forced = None
  if isinstance(choice, dict):
    fn = choice.get("function")
    if choice.get("type") != "function" or not isinstance(fn, dict) or fn.get("name") not in names:
      raise RequestError(400, f"tool_choice names no declared function (declared: {names})",
                         param="tool_choice")
    forced, choice = fn["name"], "function"
  elif choice is None:
    choice = "auto" if tools else "none"
  elif choice not in ("none", "auto", "required"):
    raise RequestError(400, "tool_choice must be 'none', 'auto', 'required' or "
                            "{\"type\": \"function\", \"function\": {\"name\": ...}}",
                       param="tool_choice")
  if not tools:
    if choice != "none":
      raise RequestError(400, f"tool_choice {choice!r} needs tools", param="tool_choice")
    return None
  return ToolSpec(tuple(tools), choice, forced, parallel is not False)


def _arguments(call: dict, where: str):
  """(name, arguments as parsed JSON, arguments as sent) of a message's tool call."""
  fn = call.get("function") if isinstance(call, dict) else None
  if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
    raise RequestError(400, f"{where} needs function.name", param="messages")
  args = fn.get("arguments", "{}")
  try:
    return fn["name"], json.loads(args) if isinstance(args, str) else args, args
  except ValueError:
    raise RequestError(400, f"{where}.function.arguments is not JSON", param="messages") from None


def _call_text(name: str, _, args) -> str:
  # As Qwen3's template writes it: arguments sent as a string are inserted verbatim.
  args = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
  return '<tool_call>\n{"name": "' + name + '", "arguments": ' + args + '}\n</tool_call>'


def render_messages(messages: list[dict], tools: ToolSpec | None) -> list[dict]:
  """OpenAI chat messages -> plain {"role", "content"} messages in Qwen's tool format.

  Args:
    messages: validated messages; assistant ones may carry `tool_calls`, `tool` ones are
      results.
    tools: the request's tools (None: none declared).
  Returns:
    The messages: the tools appended to the system turn (one is added if there is none),
    assistant calls as <tool_call> blocks after their content, consecutive tool results as one
    user turn of <tool_response> blocks.
  """
  out: list[dict] = []
  for i, m in enumerate(messages):
    content = m.get("content") or ""
    if m["role"] == "assistant" and m.get("tool_calls"):
      calls = [_call_text(*_arguments(c, f"messages[{i}].tool_calls[{k}]"))
               for k, c in enumerate(m["tool_calls"])]
      out.append({"role": "assistant", "content": "\n".join(([content] if content else []) +
                                                            calls)})
    elif m["role"] == "tool":
      block = f"<tool_response>\n{content}\n</tool_response>"
      if out and out[-1].get("tool_results"):
        out[-1]["content"] += "\n" + block
      else:
        out.append({"role": "user", "content": block, "tool_results": True})
    else:
      out.append({"role": m["role"], "content": content})
  out = [{"role": m["role"], "content": m["content"]} for m in out]
  if tools is not None:
    listing = QWEN_TOOLS_HEADER + "".join("\n" + json.dumps(t, ensure_ascii=False)
                                          for t in tools.tools) + QWEN_TOOLS_FOOTER
    if out and out[0]["role"] == "system":
      out[0] = {"role": "system", "content": out[0]["content"] + "\n\n" + listing}
    else:
      out.insert(0, {"role": "system", "content": listing})
  return out


def hf_messages(messages: list[dict]) -> list[dict]:
  """Messages for a chat template that renders tools itself (transformers' form: a call's
  arguments are a dict, not a JSON string).

  Args:
    messages: validated OpenAI messages.
  """
  out = []
  for i, m in enumerate(messages):
    m = dict(m)
    if m.get("tool_calls"):
      m["tool_calls"] = [{"type": "function", "function": dict(zip(
          ("name", "arguments"), _arguments(c, f"messages[{i}].tool_calls[{k}]")[:2]))}
                         for k, c in enumerate(m["tool_calls"])]
    out.append(m)
  return out


def chat_text(tokenizer, conv: list[dict], tools: ToolSpec | None, template_kwargs: dict,
              add_generation_prompt: bool = True) -> str:
  """A conversation's prompt text through the tokenizer's chat template.

  Args:
    tokenizer: a HF tokenizer with a chat template.
    conv: validated OpenAI messages (assistant `tool_calls`, `tool` results allowed).
    tools: the request's tools, or None.
    template_kwargs: extra template variables (e.g. enable_thinking).
    add_generation_prompt: open the assistant turn.
  Returns:
    The text: a template that mentions `tools` (Qwen's) renders them itself; any other template
    gets `render_messages`'s plain messages.
  """
  kw = dict(tokenize=False, add_generation_prompt=add_generation_prompt, **template_kwargs)
  if tools is None and all(m["role"] != "tool" and "tool_calls" not in m for m in conv):
    return tokenizer.apply_chat_template(conv, **kw)
  if "tools" in (tokenizer.chat_template or ""):
    return tokenizer.apply_chat_template(hf_messages(conv), tools=None if tools is None else
                                         list(tools.tools), **kw)
  return tokenizer.apply_chat_template(render_messages(conv, tools), **kw)


def split_tool_calls(text: str, names: set[str]) -> tuple[str | None, list[dict]]:
  """Generated text -> (content, tool_calls).

  Args:
    text: the choice's text.
    names: the declared function names.
  Returns:
    content: the text outside the parsed blocks, stripped (None if empty); tool_calls: OpenAI
    `tool_calls` entries ({"id", "type": "function", "function": {"name", "arguments": JSON
    text}}). Blocks that are not a JSON object with a declared "name" and object "arguments"
    stay in the content verbatim.
  """
  calls, kept, pos = [], [], 0
  for m in _BLOCK.finditer(text):
    try:
      obj = json.loads(m.group(1))
    except ValueError:
      obj = None
    args = obj.get("arguments", {}) if isinstance(obj, dict) else None
    if isinstance(args, str):
      try:
        args = json.loads(args)
      except ValueError:
        args = None
    if not isinstance(args, dict) or obj.get("name") not in names:
      continue  # malformed or unknown: left in the text
    kept.append(text[pos:m.start()])
    pos = m.end()
    calls.append({"id": f"call_{uuid.uuid4().hex[:24]}", "type": "function",
                  "function": {"name": obj["name"],
                               "arguments": json.dumps(args, ensure_ascii=False)}})
  content = ("".join(kept) + text[pos:]).strip()
  return content or None, calls


def streamable(text: str) -> str:
  """The part of a tools request's partial text that may be streamed as content: what comes
  before the first <tool_call> (or before a possible start of one at the end), stripped so it
  stays a prefix of `split_tool_calls`'s content.

  Args:
    text: the choice's text so far.
  """
  cut = text.find("<tool_call>")
  if cut < 0:
    cut = len(text)
    for k in range(1, len("<tool_call>")):
      if text.endswith("<tool_call>"[:k]):
        cut = len(text) - k
  return text[:cut].strip()


def forced_regex(spec: ToolSpec) -> str | None:
  """The regex of the output tool_choice demands, or None for "auto" / "none".

  Args:
    spec: the request's tools.
  Returns:
    "required": one call of any declared function; a named function: one call of it. The
    arguments follow the function's `parameters` schema (any JSON object when it has none).
  Raises:
    RequestError: 400 for a parameters schema outlines-core cannot translate.
  """
  if spec.choice not in ("required", "function"):
    return None
  alts = []
  for t in spec.tools:
    fn = t["function"]
    if spec.forced_name is not None and fn["name"] != spec.forced_name:
      continue
    params = fn.get("parameters") or {}
    try:
      args = (token_dfa.json_schema_regex(params) if params.get("properties") is not None
              else token_dfa.json_object_regex(1))
    except token_dfa.ConstraintError as e:
      raise RequestError(400, f"tools: {fn['name']}.parameters: {e}", param="tools") from None
    alts.append(r'\{"name": ' + token_dfa.escape(json.dumps(fn["name"])) + r', "arguments": (' +
                args + r')\}')
  return r"<tool_call>\n(" + "|".join(alts) + r")\n</tool_call>"
