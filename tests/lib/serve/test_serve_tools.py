"""Function calling: the Qwen tool format (prompt rendering checked against Qwen3's own chat
template), the <tool_call> parser, and the official `openai` SDK against the real server --
tool_choice "required" / a named function enforced by the token-DFA sampler on an untrained
model, "auto" with a stand-in model whose output is known, streamed tool_calls that the SDK's
stream helper accumulates, and 400s."""
import json

import jsonschema
import openai
import pytest

from lib.backends.flax_backend import FlaxBackend
from lib.backends.protocol import Backend, Completion
from lib.models import model_setup, tokenizer
from lib.serve import OpenAIServer, ServerLimits, tool_calls
from lib.serve.admission import parse_chat

pytestmark = pytest.mark.long_module(45)

WEATHER = {"type": "object", "required": ["city"],
           "properties": {"city": {"type": "string", "maxLength": 8},
                          "unit": {"enum": ["c", "f"]}}}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather now",
                                           "parameters": WEATHER}},
         {"type": "function", "function": {"name": "get_time", "parameters": {
             "type": "object", "properties": {"zone": {"enum": ["utc", "cet"]}}}}}]
MSG = [{"role": "user", "content": "Weather in Paris?"}]
HISTORY = [{"role": "system", "content": "Be brief."}, *MSG,
           {"role": "assistant", "content": None, "tool_calls": [
               {"id": "c1", "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}},
               {"id": "c2", "type": "function",
                "function": {"name": "get_time", "arguments": {"zone": "cet"}}}]},
           {"role": "tool", "tool_call_id": "c1", "content": "sunny, 21"},
           {"role": "tool", "tool_call_id": "c2", "content": "14:05"}]

# Qwen3's chat template (Qwen3-8B tokenizer_config.json, thinking parts included).
QWEN3_TEMPLATE = (
    "{%- if tools %}{{- '<|im_start|>system\\n' }}{%- if messages[0].role == 'system' %}"
    "{{- messages[0].content + '\\n\\n' }}{%- endif %}"
    "{{- \"# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\n"
    "You are provided with function signatures within <tools></tools> XML tags:\\n<tools>\" }}"
    "{%- for tool in tools %}{{- \"\\n\" }}{{- tool | tojson }}{%- endfor %}"
    "{{- \"\\n</tools>\\n\\nFor each function call, return a json object with function name and "
    "arguments within <tool_call></tool_call> XML tags:\\n<tool_call>\\n{\\\"name\\\": "
    "<function-name>, \\\"arguments\\\": <args-json-object>}\\n</tool_call><|im_end|>\\n\" }}"
    "{%- else %}{%- if messages[0].role == 'system' %}"
    "{{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}{%- endif %}{%- endif %}"
    "{%- set ns = namespace(multi_step_tool=true, last_query_index=messages|length - 1) %}"
    "{%- for index in range(ns.last_query_index, -1, -1) %}{%- set message = messages[index] %}"
    "{%- if ns.multi_step_tool and message.role == \"user\" and not('<tool_response>' in "
    "message.content and '</tool_response>' in message.content) %}"
    "{%- set ns.multi_step_tool = false %}{%- set ns.last_query_index = index %}{%- endif %}"
    "{%- endfor %}"
    "{%- for message in messages %}"
    "{%- if (message.role == \"user\") or (message.role == \"system\" and not loop.first) %}"
    "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}"
    "{%- elif message.role == \"assistant\" %}{%- set content = message.content %}"
    "{%- set reasoning_content = '' %}"
    "{%- if message.reasoning_content is defined and message.reasoning_content is not none %}"
    "{%- set reasoning_content = message.reasoning_content %}{%- else %}"
    "{%- if '</think>' in message.content %}"
    "{%- set content = message.content.split('</think>')[-1].lstrip('\\n') %}"
    "{%- set reasoning_content = message.content.split('</think>')[0].rstrip('\\n')"
    ".split('<think>')[-1].lstrip('\\n') %}{%- endif %}{%- endif %}"
    "{%- if loop.index0 > ns.last_query_index %}"
    "{%- if loop.last or (not loop.last and reasoning_content) %}"
    "{{- '<|im_start|>' + message.role + '\\n<think>\\n' + reasoning_content.strip('\\n') + "
    "'\\n</think>\\n\\n' + content.lstrip('\\n') }}"
    "{%- else %}{{- '<|im_start|>' + message.role + '\\n' + content }}{%- endif %}"
    "{%- else %}{{- '<|im_start|>' + message.role + '\\n' + content }}{%- endif %}"
    "{%- if message.tool_calls %}{%- for tool_call in message.tool_calls %}"
    "{%- if (loop.first and content) or (not loop.first) %}{{- '\\n' }}{%- endif %}"
    "{%- if tool_call.function %}{%- set tool_call = tool_call.function %}{%- endif %}"
    "{{- '<tool_call>\\n{\"name\": \"' }}{{- tool_call.name }}{{- '\", \"arguments\": ' }}"
    "{%- if tool_call.arguments is string %}{{- tool_call.arguments }}{%- else %}"
    "{{- tool_call.arguments | tojson }}{%- endif %}{{- '}\\n</tool_call>' }}{%- endfor %}"
    "{%- endif %}{{- '<|im_end|>\\n' }}"
    "{%- elif message.role == \"tool\" %}"
    "{%- if loop.first or (messages[loop.index0 - 1].role != \"tool\") %}"
    "{{- '<|im_start|>user' }}{%- endif %}"
    "{{- '\\n<tool_response>\\n' }}{{- message.content }}{{- '\\n</tool_response>' }}"
    "{%- if loop.last or (messages[loop.index0 + 1].role != \"tool\") %}"
    "{{- '<|im_end|>\\n' }}{%- endif %}{%- endif %}{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}"
    "{%- if enable_thinking is defined and enable_thinking is false %}"
    "{{- '<think>\\n\\n</think>\\n\\n' }}{%- endif %}{%- endif %}")


class StandIn(Backend):
  """A model whose output is known: it answers every conversation with `reply`, and keeps the
  conversations it was sent."""
  name = "stand-in"

  def __init__(self, reply: str):
    super().__init__()
    self.reply, self.seen = reply, []

  def _generate(self, conversations, params):
    self.seen.extend(conversations)
    return [Completion(self.reply, 10, 5, 0.0, "stop") for _ in conversations]


@pytest.fixture(scope="module")
def tok(tmp_path_factory):
  return tokenizer.train_tokenizer(model_setup.TINY_CORPUS, 384, tmp_path_factory.mktemp("tok"))


@pytest.mark.parametrize("conv,tools", [(MSG, TOOLS), (HISTORY, TOOLS), (HISTORY[1:], None),
                                        (HISTORY[1:], TOOLS[:1])])
def test_rendering_equals_qwen3_template(tok, conv, tools, tmp_path):
  request = parse_chat({"messages": conv, "tools": tools}, "accord", ServerLimits())
  conv, spec = request.prompt, request.tools
  ours = tool_calls.chat_text(tok, conv, spec, {})  # ChatML template + render_messages
  tok.save_pretrained(tmp_path)
  qwen = tokenizer.load_tokenizer(tmp_path)
  qwen.chat_template = QWEN3_TEMPLATE  # renders tools itself: chat_text passes them through
  assert ours == tool_calls.chat_text(qwen, conv, spec, {})
  assert ("<tools>" in ours) == bool(tools) and "<|im_start|>tool" not in ours


def test_parser_keeps_malformed_and_unknown_blocks_as_text():
  names = {"get_weather", "get_time"}
  text = ('Checking.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n'
          '</tool_call>\n<tool_call>{"name": "get_time", "arguments": "{\\"zone\\": \\"utc\\"}"}'
          '</tool_call>\n<tool_call>{"name": "get_weather", "arguments": {"city": </tool_call>'
          '<tool_call>{"name": "rm_rf", "arguments": {}}</tool_call> done')
  content, calls = tool_calls.split_tool_calls(text, names)
  assert [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in calls] == [
      ("get_weather", {"city": "Oslo"}), ("get_time", {"zone": "utc"})]
  assert all(c["type"] == "function" and c["id"].startswith("call_") for c in calls)
  assert len({c["id"] for c in calls}) == 2
  assert content == ('Checking.\n\n\n<tool_call>{"name": "get_weather", "arguments": {"city": '
                     '</tool_call><tool_call>{"name": "rm_rf", "arguments": {}}</tool_call> done')
  assert tool_calls.split_tool_calls("<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}"
                                     "\n</tool_call>", names)[0] is None
  assert tool_calls.split_tool_calls("no calls", names) == ("no calls", [])
  assert tool_calls.split_tool_calls("<tool_call>{\"name\": \"get_time\"", names)[1] == []
  assert tool_calls.streamable(" Sure: <tool_c") == "Sure:"
  assert tool_calls.streamable("Sure <tool_call>{") == "Sure"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
  backend = FlaxBackend.tiny(tmp_path_factory.mktemp("tiny"), min_batch=4, max_batch=8)
  limits = ServerLimits(max_new_tokens=96, max_prompt_tokens=2000, max_batch=8)
  server = OpenAIServer(backend, "accord", limits=limits, chunk_size=8).start()
  client = openai.OpenAI(base_url=server.url, api_key="unused", max_retries=0, timeout=300)
  yield client
  server.shutdown()


def _check_calls(message, names):
  assert message.content is None and message.tool_calls
  for call in message.tool_calls:
    assert call.type == "function" and call.function.name in names
    args = json.loads(call.function.arguments)
    schema = next(t for t in TOOLS if t["function"]["name"] == call.function.name)
    jsonschema.validate(args, schema["function"]["parameters"])


def test_named_and_required_tool_choice_are_enforced(served):
  named = {"type": "function", "function": {"name": "get_weather"}}
  for temperature in (0.0, 1.0):
    r = served.chat.completions.create(model="accord", messages=HISTORY, tools=TOOLS, n=3,
                                       tool_choice=named, temperature=temperature, seed=1)
    for c in r.choices:
      assert c.finish_reason == "tool_calls"
      _check_calls(c.message, {"get_weather"})
  r = served.chat.completions.create(model="accord", messages=MSG, tools=TOOLS, n=4,
                                     tool_choice="required", temperature=1.2, seed=2)
  for c in r.choices:
    assert c.finish_reason == "tool_calls"
    _check_calls(c.message, {"get_weather", "get_time"})


def test_streamed_tool_calls_accumulate_in_the_sdk(served):
  ask = dict(model="accord", messages=MSG, tools=TOOLS, tool_choice="required", seed=4,
             temperature=1.0)
  plain = served.chat.completions.create(**ask).choices[0].message.tool_calls[0].function
  with served.chat.completions.stream(**ask) as stream:
    events = [e.type for e in stream]
    final = stream.get_final_completion().choices[0]
  assert "tool_calls.function.arguments.done" in events
  assert final.finish_reason == "tool_calls"
  assert (final.message.tool_calls[0].function.name, final.message.tool_calls[0].function.arguments
          ) == (plain.name, plain.arguments)


def test_auto_parses_a_known_output_and_streams_its_text(tmp_path):
  reply = ('Let me check.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}'
           '\n</tool_call>')
  stand_in = StandIn(reply)
  server = OpenAIServer(stand_in, "accord").start()
  try:
    client = openai.OpenAI(base_url=server.url, api_key="unused", max_retries=0)
    r = client.chat.completions.create(model="accord", messages=HISTORY, tools=TOOLS)
    c = r.choices[0]
    assert c.finish_reason == "tool_calls" and c.message.content == "Let me check."
    assert c.message.tool_calls[0].function.name == "get_weather"
    assert json.loads(c.message.tool_calls[0].function.arguments) == {"city": "Paris"}
    # The stand-in saw Qwen's format: tools in the system turn, calls and results as text.
    seen = stand_in.seen[-1]
    assert "<tools>" in seen[0]["content"] and seen[0]["role"] == "system"
    assert seen[3]["role"] == "user" and seen[3]["content"].count("<tool_response>") == 2
    with client.chat.completions.stream(model="accord", messages=MSG, tools=TOOLS) as stream:
      final = stream.get_final_completion().choices[0]
    assert final.message.content == "Let me check." and final.finish_reason == "tool_calls"
    arguments = final.message.tool_calls[0].function.arguments
    assert arguments == c.message.tool_calls[0].function.arguments
    r = client.chat.completions.create(model="accord", messages=MSG, tools=TOOLS,
                                       tool_choice="none")
    assert r.choices[0].message.content == reply and not r.choices[0].message.tool_calls
    with pytest.raises(openai.BadRequestError, match="needs the flax backend"):
      client.chat.completions.create(model="accord", messages=MSG, tools=TOOLS,
                                     tool_choice="required")
  finally:
    server.shutdown()


@pytest.mark.parametrize("extra,named", [
    ({"tool_choice": {"type": "function", "function": {"name": "nope"}}},
     "tool_choice names no declared function"),
    ({"tool_choice": "sometimes"}, "tool_choice must be"),
    ({"tools": TOOLS + TOOLS[:1]}, "function names must be unique"),
    ({"tool_choice": "required", "guided_regex": "a"}, "both constrain the output"),
    ({"parallel_tool_calls": "yes"}, "parallel_tool_calls must be a boolean"),
    ({"tools": [{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"x": {"type": "no-such-type"}}}}}],
      "tool_choice": "required"}, "tools: f.parameters: unsupported JSON schema"),
    ({"messages": [*MSG, {"role": "assistant", "tool_calls": [
        {"type": "function", "function": {"name": "f", "arguments": "{oops"}}]}]},
     "messages[1].tool_calls[0].function.arguments is not JSON"),
])
def test_bad_tool_requests_get_400(served, extra, named):
  with pytest.raises(openai.BadRequestError) as e:
    served.chat.completions.create(model="accord", messages=MSG, max_tokens=4,
                                   extra_body={"tools": TOOLS, **extra})
  assert named in e.value.body["message"]
