"""Structured output through the official `openai` SDK against the real server (tiny random Flax
model): response_format json_schema / json_object, vLLM's structured_outputs and guided_* fields,
on chat and completions, streamed and not; the outputs of an untrained model always match, for
several seeds and temperatures, because the sampler masks every draw on device."""
import json
import re

import jsonschema
import openai
import pytest

from lib.backends.flax_backend import FlaxBackend
from lib.serve import OpenAIServer, ServerLimits

pytestmark = pytest.mark.long_module(60)

MSG = [{"role": "user", "content": "Describe a pet as JSON."}]
SCHEMA = {"type": "object", "required": ["name", "legs", "kind"],
          "properties": {"name": {"type": "string", "maxLength": 5},
                         "legs": {"type": "integer", "maxDigits": 2},
                         "kind": {"enum": ["cat", "dog", "bird"]}, "tame": {"type": "boolean"}}}
FORMAT = {"type": "json_schema", "json_schema": {"name": "pet", "schema": SCHEMA}}


@pytest.fixture(scope="module")
def served(tmp_path_factory):
  backend = FlaxBackend.tiny(tmp_path_factory.mktemp("tiny"), min_batch=4, max_batch=8)
  limits = ServerLimits(max_new_tokens=96, max_prompt_tokens=400, max_batch=8,
                        max_constraint_cells=30_000)
  server = OpenAIServer(backend, "accord", limits=limits, chunk_size=8).start()
  client = openai.OpenAI(base_url=server.url, api_key="unused", max_retries=0, timeout=300)
  yield server, client
  server.shutdown()


@pytest.mark.parametrize("temperature", [0.0, 1.0, 1.8])
def test_json_schema_outputs_always_validate(served, temperature):
  _, client = served
  for seed in (0, 1):
    r = client.chat.completions.create(model="accord", messages=MSG, max_tokens=96, n=3,
                                       temperature=temperature, seed=seed, response_format=FORMAT)
    for c in r.choices:
      assert c.finish_reason == "stop", c.message.content
      jsonschema.validate(json.loads(c.message.content), SCHEMA)


def test_vllm_fields_on_completions_and_chat(served):
  _, client = served
  pattern = r"[a-c]{2,4}-[0-9]"
  for extra in ({"guided_regex": pattern}, {"structured_outputs": {"regex": pattern}}):
    r = client.completions.create(model="accord", prompt="Code:", max_tokens=16, n=4,
                                  temperature=1.0, seed=2, extra_body=extra)
    assert all(re.fullmatch(pattern, c.text) and c.finish_reason == "stop" for c in r.choices)
  for extra in ({"guided_choice": ["north", "south"]},
                {"structured_outputs": {"choice": ["north", "south"]}}):
    r = client.chat.completions.create(model="accord", messages=MSG, max_tokens=16, n=4,
                                       temperature=1.0, extra_body=extra)
    assert {c.message.content for c in r.choices} <= {"north", "south"}
  r = client.chat.completions.create(model="accord", messages=MSG, max_tokens=96, n=2,
                                     temperature=0.5, extra_body={"guided_json": SCHEMA})
  for c in r.choices:
    jsonschema.validate(json.loads(c.message.content), SCHEMA)
  # Legacy and current names are the same constraint.
  a = client.completions.create(model="accord", prompt="Pet:", max_tokens=96, temperature=1.0,
                                seed=5, extra_body={"structured_outputs": {"json": SCHEMA}})
  b = client.completions.create(model="accord", prompt="Pet:", max_tokens=96, temperature=1.0,
                                seed=5, extra_body={"response_format": FORMAT})
  assert a.choices[0].text == b.choices[0].text


def test_json_object_gives_objects_when_it_finishes(served):
  _, client = served
  # An untrained model may write a string until max_tokens ("length"); every output that
  # finished is one JSON object, and a greedy one finishes here.
  r = client.chat.completions.create(model="accord", messages=MSG, max_tokens=96, n=4,
                                     temperature=0.3, seed=0,
                                     response_format={"type": "json_object"})
  done = [c.message.content for c in r.choices if c.finish_reason == "stop"]
  assert done, [c.message.content for c in r.choices]
  assert all(isinstance(json.loads(t), dict) for t in done)
  assert all(c.message.content.startswith("{") for c in r.choices)


def test_streaming_with_a_constraint_equals_the_plain_answer(served):
  _, client = served
  ask = dict(model="accord", messages=MSG, max_tokens=96, temperature=1.0, seed=7,
             response_format=FORMAT)
  plain = client.chat.completions.create(**ask).choices[0].message.content
  chunks = [c.choices[0].delta.content or "" for c in
            client.chat.completions.create(stream=True, **ask) if c.choices]
  assert "".join(chunks) == plain and len([c for c in chunks if c]) >= 2
  jsonschema.validate(json.loads(plain), SCHEMA)


def test_unconstrained_requests_are_unchanged_beside_constrained_ones(served):
  _, client = served
  ask = dict(model="accord", messages=MSG, max_tokens=12, temperature=1.0, seed=3)
  before = client.chat.completions.create(**ask).choices[0].message.content
  client.chat.completions.create(model="accord", messages=MSG, max_tokens=8,
                                 extra_body={"guided_regex": "[0-9]+"})
  assert client.chat.completions.create(**ask).choices[0].message.content == before


@pytest.mark.parametrize("extra,named", [
    ({"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": 3}}},
     "response_format.json_schema.schema must be a JSON schema object"),
    ({"guided_json": "{not json"}, "guided_json is not valid JSON"),
    ({"structured_outputs": {"regex": "a", "choice": ["b"]}}, "give one of"),
    ({"guided_choice": []}, "guided_choice must be a non-empty list"),
    ({"guided_regex": "[a-z]{5000}"}, "token classes = 40008 table cells, over the limit of 30000"),
])
def test_malformed_constraints_get_one_400_line(served, extra, named):
  _, client = served
  with pytest.raises(openai.BadRequestError) as e:
    client.chat.completions.create(model="accord", messages=MSG, max_tokens=4, extra_body=extra)
  message = e.value.body["message"]
  assert named in message and "\n" not in message, message
