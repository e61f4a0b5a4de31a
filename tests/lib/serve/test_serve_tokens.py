"""Token-level requests through the official `openai` SDK (tiny random Flax model, in process,
127.0.0.1): prompt scoring with echo (lm-evaluation-harness's loglikelihood request), batched
and token-id prompts, vLLM's token-id fields, /tokenize and /detokenize, and the 404 that lists
the routes."""
import json
import urllib.error
import urllib.request

import jax
import numpy as np
import openai
import pytest

from lib.backends.flax_backend import FlaxBackend
from lib.serve import OpenAIServer, ServerLimits
from lib.train.state import positions_from_mask

PROMPT = "Range [0, 7]. Reply with one integer."


@pytest.fixture(scope="module")
def served(tmp_path_factory):
  backend = FlaxBackend.tiny(tmp_path_factory.mktemp("tiny"), min_batch=4, max_batch=8)
  limits = ServerLimits(max_new_tokens=16, max_prompt_tokens=200, max_batch=8)
  server = OpenAIServer(backend, "accord", limits=limits, chunk_size=4).start()
  client = openai.OpenAI(base_url=server.url, api_key="unused", max_retries=0, timeout=120)
  yield server, client, backend
  server.shutdown()


def _post(server, route, body):
  req = urllib.request.Request(f"http://{server.host}:{server.port}{route}",
                               data=json.dumps(body).encode(),
                               headers={"Content-Type": "application/json"})
  try:
    with urllib.request.urlopen(req, timeout=60) as r:
      return r.status, json.loads(r.read())
  except urllib.error.HTTPError as e:
    return e.code, json.loads(e.read())


def _reference_logprobs(backend, ids):
  """log p(ids[t] | ids[:t]) from one unpadded, unjitted forward, log-softmax in numpy."""
  x = np.asarray([ids])
  mask = np.ones_like(x)
  logits = np.asarray(backend.model(x, attention_mask=mask, positions=positions_from_mask(mask)),
                      np.float64)[0]
  top = logits.max(-1, keepdims=True)
  logp = logits - top - np.log(np.exp(logits - top).sum(-1, keepdims=True))
  return [logp[t - 1, ids[t]] for t in range(1, len(ids))], logp


def test_echo_scores_the_prompt_like_an_independent_forward(served):
  server, client, backend = served
  ids = backend.tokenizer.encode(PROMPT, add_special_tokens=False)
  r = client.completions.create(model="accord", prompt=PROMPT, max_tokens=0, echo=True,
                                logprobs=2)
  (c,) = r.choices
  assert c.text == PROMPT and c.finish_reason == "length"
  lp = c.logprobs
  assert len(lp.tokens) == len(ids) and lp.token_logprobs[0] is None and lp.top_logprobs[0] is None
  expected, logp = _reference_logprobs(backend, ids)
  np.testing.assert_allclose(lp.token_logprobs[1:], expected, atol=2e-4)
  assert "".join(lp.tokens) == PROMPT
  assert lp.text_offset == [len("".join(lp.tokens[:i])) for i in range(len(ids))]
  # The alternatives are the model's two most likely tokens. By text, two byte-level tokens can
  # share a name ("\ufffd"); named by id they cannot.
  by_id = client.completions.create(model="accord", prompt=PROMPT, max_tokens=0, echo=True,
                                    logprobs=2, extra_body={"return_tokens_as_token_ids": True})
  lp_id = by_id.choices[0].logprobs
  assert lp_id.tokens == [f"token_id:{t}" for t in ids]
  for t in range(1, len(ids)):
    best = np.argsort(-logp[t - 1])[:2]
    top = lp_id.top_logprobs[t]
    assert set(top) == {f"token_id:{b}" for b in best}
    np.testing.assert_allclose([top[f"token_id:{b}"] for b in best], logp[t - 1, best],
                               atol=2e-4)
  assert r.usage.prompt_tokens == len(ids) and r.usage.completion_tokens == 0


def test_lm_eval_loglikelihood_request_shape(served):
  # lm-eval's local-completions sends context + continuation as token ids, echo, max_tokens=1,
  # logprobs=1, temperature 0, and sums token_logprobs[ctxlen:-1].
  _, client, backend = served
  ctx = backend.tokenizer.encode("Range [0, 7].", add_special_tokens=False)
  cont = backend.tokenizer.encode(" Reply", add_special_tokens=False)
  r = client.completions.create(model="accord", prompt=[ctx + cont, ctx], max_tokens=1,
                                echo=True, logprobs=1, temperature=0)
  assert [c.index for c in r.choices] == [0, 1]
  full = r.choices[0].logprobs
  assert len(full.token_logprobs) == len(ctx) + len(cont) + 1  # prompt + the sampled token
  expected, _ = _reference_logprobs(backend, ctx + cont)
  np.testing.assert_allclose(sum(full.token_logprobs[len(ctx):-1]),
                             sum(expected[len(ctx) - 1:]), atol=5e-4)
  greedy = r.choices[0].logprobs.top_logprobs[-1]
  assert max(greedy.values()) == pytest.approx(full.token_logprobs[-1], abs=1e-6)


def test_max_tokens_zero_needs_echo_and_scoring_does_not_stream(served):
  server, client, _ = served
  with pytest.raises(openai.BadRequestError, match="max_tokens"):
    client.completions.create(model="accord", prompt=PROMPT, max_tokens=0)
  with pytest.raises(openai.BadRequestError, match="echo"):
    client.completions.create(model="accord", prompt=PROMPT, max_tokens=2, echo=True, stream=True)


def test_prompt_lists_and_token_ids_give_one_choice_per_prompt_and_n(served):
  server, client, backend = served
  prompts = [PROMPT, "Pick a colour.", "Say hi."]
  single = [client.completions.create(model="accord", prompt=p, max_tokens=6, temperature=0)
            .choices[0].text for p in prompts]
  before = len(server.batches)
  batched = client.completions.create(model="accord", prompt=prompts, max_tokens=6,
                                      temperature=0, n=2)
  assert len(server.batches) - before == 1  # all prompts and choices in one engine call
  assert [c.index for c in batched.choices] == list(range(6))
  assert [c.text for c in batched.choices] == [t for t in single for _ in range(2)]
  ids = [backend.tokenizer.encode(p, add_special_tokens=False) for p in prompts]
  as_ids = client.completions.create(model="accord", prompt=ids, max_tokens=6, temperature=0)
  assert [c.text for c in as_ids.choices] == single
  one = client.completions.create(model="accord", prompt=ids[0], max_tokens=6, temperature=0)
  assert one.choices[0].text == single[0]
  with pytest.raises(openai.BadRequestError, match="vocabulary"):
    client.completions.create(model="accord", prompt=[[1, 2, 10**6]], max_tokens=2)
  with pytest.raises(openai.BadRequestError, match="max_batch"):
    client.completions.create(model="accord", prompt=prompts, max_tokens=2, n=3)
  with pytest.raises(openai.BadRequestError, match="prompt"):
    client.completions.create(model="accord", prompt=[PROMPT, ""], max_tokens=2)


def test_streamed_prompt_list_numbers_choices_on(served):
  _, client, _ = served
  prompts = [PROMPT, "Say hi."]
  plain = client.completions.create(model="accord", prompt=prompts, max_tokens=6, temperature=0)
  chunks = list(client.completions.create(model="accord", prompt=prompts, max_tokens=6,
                                          temperature=0, stream=True))
  for c in plain.choices:
    assert "".join(ch.choices[0].text for ch in chunks if ch.choices[0].index == c.index) == \
        c.text


def test_token_ids_in_and_out(served):
  server, client, backend = served
  msg = [{"role": "user", "content": PROMPT}]
  r = client.chat.completions.create(model="accord", messages=msg, max_tokens=6, temperature=0,
                                     logprobs=True,
                                     extra_body={"return_token_ids": True,
                                                 "return_tokens_as_token_ids": True})
  c = r.choices[0].model_dump()
  status, tok = _post(server, "/tokenize", {"messages": msg})
  assert status == 200 and c["prompt_token_ids"] == tok["tokens"]
  assert tok["count"] == r.usage.prompt_tokens and tok["max_model_len"] == server.limits.context_length
  assert [e["token"] for e in c["logprobs"]["content"]] == [f"token_id:{t}" for t in c["token_ids"]]
  status, text = _post(server, "/detokenize", {"tokens": c["token_ids"]})
  assert status == 200 and backend.tokenizer.decode(c["token_ids"]) == text["prompt"]
  assert r.choices[0].message.content in text["prompt"]  # text may drop a final EOS token
  # Feeding the prompt's ids back reproduces the answer exactly (token in = token out).
  again = client.completions.create(model="accord", prompt=c["prompt_token_ids"], max_tokens=6,
                                    temperature=0, extra_body={"return_token_ids": True})
  assert again.choices[0].model_dump()["token_ids"] == c["token_ids"]
  status, tok = _post(server, "/tokenize", {"prompt": PROMPT})
  assert tok["tokens"] == backend.tokenizer.encode(PROMPT)


def test_token_routes_refuse_bad_input_in_one_line(served):
  server, _, _ = served
  for route, body, field in [("/tokenize", {"prompt": 3}, "prompt"),
                             ("/tokenize", {"prompt": "a", "messages": []}, "prompt"),
                             ("/tokenize", {"prompt": "a", "truncate": 4}, "truncate"),
                             ("/detokenize", {"tokens": [1, -2]}, "tokens"),
                             ("/detokenize", {"tokens": "12"}, "tokens")]:
    status, err = _post(server, route, body)
    assert status == 400 and err["error"]["param"] == field, (route, body, err)
  status, err = _post(server, "/tokenize", {"model": "other", "prompt": "a"})
  assert status == 404


def test_unknown_routes_list_the_ones_that_exist(served):
  server, _, _ = served
  status, err = _post(server, "/v1/audio/speech", {"input": "hi"})
  assert status == 404
  assert "/v1/chat/completions" in err["error"]["message"] and "/tokenize" in err["error"]["message"]


def test_responses_api_answers_like_chat(served):
  _, client, _ = served
  msg = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": PROMPT}]
  chat = client.chat.completions.create(model="accord", messages=msg, max_tokens=6,
                                        temperature=0)
  r = client.responses.create(model="accord", instructions="Be brief.", input=PROMPT,
                              max_output_tokens=6, temperature=0)
  assert r.output_text == chat.choices[0].message.content
  assert r.usage.input_tokens == chat.usage.prompt_tokens
  assert r.usage.output_tokens == chat.usage.completion_tokens
  assert r.status == ("incomplete" if chat.choices[0].finish_reason == "length" else "completed")
  parts = client.responses.create(
      model="accord", max_output_tokens=6, temperature=0,
      input=[{"role": "system", "content": "Be brief."},
             {"role": "user", "content": [{"type": "input_text", "text": PROMPT}]}])
  assert parts.output_text == r.output_text
  with pytest.raises(openai.BadRequestError, match="stream"):
    client.responses.create(model="accord", input=PROMPT, stream=True)
  with pytest.raises(openai.BadRequestError, match="tools"):
    client.responses.create(model="accord", input=PROMPT, tools=[{"type": "web_search"}])


def test_scores_do_not_depend_on_the_batch_they_share(served):
  _, _, backend = served
  seqs = [backend.tokenizer.encode(t, add_special_tokens=False)
          for t in (PROMPT, "Say hi.", "Pick a colour and a number between one and nine.")]
  together = backend.score(seqs, top_logprobs=3)
  for seq, batched in zip(seqs, together):
    (alone,) = backend.score([seq], top_logprobs=3)
    np.testing.assert_allclose(batched["logprobs"][1:], alone["logprobs"][1:], atol=1e-5)
    assert batched["top_ids"][1:] == alone["top_ids"][1:]
  assert jax.numpy.isfinite(np.asarray(together[2]["logprobs"][1:])).all()
