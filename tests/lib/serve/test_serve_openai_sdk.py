"""The official `openai` SDK drives the server (tiny random Flax model, in process, 127.0.0.1):
chat, streaming with usage, n > 1 in one batch, seed, log-probs, completions, embeddings, models,
content parts, and 400s that name unsupported fields and limits."""
import json
import urllib.request

import numpy as np
import openai
import pytest

from lib.backends.flax_backend import FlaxBackend
from lib.backends.protocol import SamplingParams
from lib.serve import OpenAIServer, ServerLimits

MSG = [{"role": "user", "content": "Range [0, 7]. Reply with one integer."}]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
  backend = FlaxBackend.tiny(tmp_path_factory.mktemp("tiny"), min_batch=4, max_batch=8)
  limits = ServerLimits(max_new_tokens=16, max_prompt_tokens=200, max_batch=8)
  server = OpenAIServer(backend, "accord", limits=limits, chunk_size=4).start()
  client = openai.OpenAI(base_url=server.url, api_key="unused", max_retries=0, timeout=120)
  yield server, client, backend
  server.shutdown()


def test_chat_matches_the_model_and_reports_usage(served):
  server, client, backend = served
  r = client.chat.completions.create(model="accord", messages=MSG, max_tokens=5, temperature=0)
  (local,) = backend.generate([MSG], SamplingParams(max_tokens=5, temperature=0.0))
  assert r.choices[0].message.content == local.text
  assert r.usage.prompt_tokens == local.input_tokens
  assert r.usage.completion_tokens == local.output_tokens
  assert r.choices[0].finish_reason in ("stop", "length")


def test_streaming_with_usage_equals_the_plain_answer(served):
  _, client, _ = served
  plain = client.chat.completions.create(model="accord", messages=MSG, max_tokens=6,
                                         temperature=0)
  chunks = list(client.chat.completions.create(
      model="accord", messages=MSG, max_tokens=6, temperature=0, stream=True,
      stream_options={"include_usage": True}))
  text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
  assert text == plain.choices[0].message.content
  assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == \
      plain.choices[0].finish_reason
  assert chunks[-1].usage.completion_tokens == plain.usage.completion_tokens
  # Text arrives between decode chunks (chunk_size 4), not all at the end; a stop string is
  # never streamed.
  free = client.chat.completions.create(model="accord", messages=MSG, max_tokens=16,
                                        temperature=0).choices[0].message.content
  live = [c.choices[0].delta.content for c in client.chat.completions.create(
      model="accord", messages=MSG, max_tokens=16, temperature=0, stream=True)
          if c.choices and c.choices[0].delta.content]
  assert "".join(live) == free and len(live) >= 3, live
  stop = free[len(free) // 2:len(free) // 2 + 2]
  cut = "".join(c.choices[0].delta.content or "" for c in client.chat.completions.create(
      model="accord", messages=MSG, max_tokens=16, temperature=0, stream=True, stop=[stop]))
  assert cut == free[:free.index(stop)]
  two = list(client.chat.completions.create(model="accord", messages=MSG, max_tokens=6,
                                            temperature=0, stream=True, n=2))
  for index in (0, 1):
    assert "".join(c.choices[0].delta.content or "" for c in two
                   if c.choices[0].index == index) == text


def test_n_choices_in_one_batch_and_seed_reproduces(served):
  server, client, _ = served
  before = len(server.batches)
  ask = lambda seed: client.chat.completions.create(
      model="accord", messages=MSG, max_tokens=8, temperature=1.0, n=3, seed=seed)
  a, b, c = ask(11), ask(11), ask(12)
  assert len(server.batches) - before == 3  # each request's 3 choices shared one sampler call
  texts = lambda r: [ch.message.content for ch in r.choices]
  assert len(a.choices) == 3 and texts(a) == texts(b) and texts(a) != texts(c)
  assert len(set(texts(a))) > 1  # the n rows drew different samples


def test_logprobs_and_top_logprobs(served):
  _, client, _ = served
  r = client.chat.completions.create(model="accord", messages=MSG, max_tokens=4, temperature=0,
                                     logprobs=True, top_logprobs=3)
  content = r.choices[0].logprobs.content
  assert len(content) == r.usage.completion_tokens
  for tok in content:
    tops = [t.logprob for t in tok.top_logprobs]
    assert len(tops) == 3 and tops == sorted(tops, reverse=True) and all(x <= 0 for x in tops)
    assert tok.logprob == pytest.approx(tops[0], abs=1e-5)  # greedy: the most likely token


def test_completions_embeddings_models(served):
  server, client, backend = served
  r = client.completions.create(model="accord", prompt="The agent moves", max_tokens=4,
                                temperature=0, logprobs=2)
  assert r.object == "text_completion" and len(r.choices[0].logprobs.tokens) == \
      r.usage.completion_tokens
  e = client.embeddings.create(model="accord", input=["a box", "the goal"])
  np.testing.assert_allclose([d.embedding for d in e.data], backend.embed(["a box", "the goal"]),
                             atol=1e-5)
  assert [m.id for m in client.models.list()] == ["accord"]
  assert client.models.retrieve("accord").id == "accord"
  with pytest.raises(openai.NotFoundError):
    client.models.retrieve("other")


def test_content_as_text_parts(served):
  _, client, _ = served
  parts = [{"role": "user", "content": [{"type": "text", "text": MSG[0]["content"][:10]},
                                        {"type": "text", "text": MSG[0]["content"][10:]}]}]
  a = client.chat.completions.create(model="accord", messages=parts, max_tokens=4, temperature=0)
  b = client.chat.completions.create(model="accord", messages=MSG, max_tokens=4, temperature=0)
  assert a.choices[0].message.content == b.choices[0].message.content


def test_developer_role_is_the_system_turn(served):
  _, client, _ = served
  ask = lambda role: client.chat.completions.create(
      model="accord", messages=[{"role": role, "content": "Be brief."}, *MSG], max_tokens=4,
      temperature=0)
  system, developer = ask("system"), ask("developer")
  assert developer.choices[0].message.content == system.choices[0].message.content
  assert developer.usage.prompt_tokens == system.usage.prompt_tokens
  r = client.responses.create(model="accord", max_output_tokens=4, temperature=0,
                              input=[{"role": "developer", "content": "Be brief."}, *MSG])
  assert r.output_text == system.choices[0].message.content


@pytest.mark.parametrize("extra,named", [
    ({"functions": [{"name": "f"}]}, "functions"),
    ({"tools": [{"type": "function", "function": {}}]}, "tools[0]"),
    ({"tool_choice": "required"}, "tool_choice 'required' needs tools"),
    ({"response_format": {"type": "xml"}}, "response_format must be"),
    ({"response_format": {"type": "json_schema"}}, "response_format json_schema needs"),
    ({"guided_regex": "(unclosed"}, "guided_regex: cannot compile the pattern"),
    ({"structured_outputs": {"grammar": "root ::= x"}}, "unsupported key(s) grammar"),
    ({"guided_regex": "a", "guided_choice": ["b"]}, "give one structured-output field"),
    ({"presence_penalty": 0.5}, "presence_penalty"),
    ({"frequency_penalty": 0.5}, "frequency_penalty"),
    ({"logit_bias": {"5": 10}}, "logit_bias"),
    ({"max_tokens": 10**9}, "max_new_tokens limit of 16"),
    ({"max_tokens": 0}, "max_tokens"),
    ({"temperature": float("nan")}, "temperature"),
    ({"temperature": float("inf")}, "temperature"),
    ({"top_k": -3}, "top_k"),
    ({"top_p": 0}, "top_p"),
    ({"n": 9}, "n must be in"),
    ({"messages": [{"role": "user", "content": "x " * 400}]}, "max_prompt_tokens limit of 200"),
])
def test_bad_requests_get_400_naming_the_field(served, extra, named):
  server, _, _ = served
  body = {"model": "accord", "messages": MSG, "max_tokens": 4, **extra}
  status, reply = post(server.url + "/chat/completions", body)
  assert status == 400, reply
  assert named in reply["error"]["message"]


def post(url, body, headers=None):
  # allow_nan: the stdlib writes NaN/Infinity literals, as careless clients do.
  req = urllib.request.Request(url, data=json.dumps(body, allow_nan=True).encode(),
                               headers={"Content-Type": "application/json", **(headers or {})})
  try:
    with urllib.request.urlopen(req, timeout=60) as r:
      return r.status, json.load(r)
  except urllib.error.HTTPError as e:
    return e.code, json.loads(e.read())
