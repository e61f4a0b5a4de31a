"""Constrained decoding of Short DSL commitments: the regex accepts every supervision target and
only programs the real parser accepts, and an untrained model decoding under it always writes a
parseable commitment (raw_valid 100%), through the flax sampler and through our server."""
import re

import pytest
from flax import nnx

from agents.gencoord import episode as E, protocol, suites
from agents.gencoord.dsl import ParseError, parse
from agents.gencoord.learned import chat, constrained, policy as learned, training_recipes
from agents.gencoord.learned import tokenizer as dsl_tokenizer
from agents.gencoord.prompt import render
from lib import models
from lib.backends.openai_http import OpenAIBackend
from lib.backends.protocol import SamplingParams
from lib.serve import OpenAIServer, ServerLimits

pytestmark = pytest.mark.long_module(40)


def test_regex_accepts_every_commitment_target():
  pattern = re.compile(constrained.DSL_REGEX)
  for recipe in ("direct_dsl", "single_step"):
    targets = [r.target for r in training_recipes.get(recipe).rows()]
    assert all(pattern.fullmatch(t) for t in targets), recipe


@pytest.mark.parametrize("text", [
    "SELF resource.obtain(q=1,q=2,item=log)\nREQ -",          # duplicate key
    "SELF resource.obtain(q=1e999,item=log)\nREQ -",           # overflowing number
    "SELF resource.fly(q=1)\nREQ -",                           # skill outside the catalog
    "SELF resource.obtain(item=log,q=1)\nREQ -",               # non-canonical order
    "SELF resource.obtain(q=1,item=log)\nREQ agent_b",        # request without a plan
    "SELF -\nREQ -\nREQ -",                                    # three lines
])
def test_regex_rejects_what_it_cannot_vouch_for(text):
  assert not re.fullmatch(constrained.DSL_REGEX, text)


def test_surfaces_without_a_regex_are_refused():
  with pytest.raises(ValueError, match="not 'json'"):
    constrained.surface_regex("json")


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
  eps = suites.forward("heldout")[:8]
  tok = dsl_tokenizer.train_dsl_tokenizer(
      [chat.system_prompt(), render(E.sender_context(eps[0]))], 300, tmp_path_factory.mktemp("t"))
  config = models.preset("qwen3-tiny", vocab_size=len(tok), eos_token_ids=(
      tok.convert_tokens_to_ids("<|im_end|>"),), pad_token_id=tok.pad_token_id)
  return eps, tok, [models.build(config, rngs=nnx.Rngs(seed)) for seed in (0, 1)]


# The regex bounds every value (9-digit integers, 32-character atoms), so an output ends; with
# this 300-token vocabulary and digits as single tokens (tokenizer.SPLIT) an untrained model's
# walk through such values takes up to ~760 tokens (measured), hence the cap.
MAX_TOKENS = 1024


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_untrained_models_always_write_parseable_commitments(setup, temperature):
  eps, tok, untrained = setup
  convs = [chat.messages(E.sender_context(ep), "dsl") for ep in eps]
  for seed, model in enumerate(untrained):
    outs = learned.flax_llm(model, tok).generate(convs, SamplingParams(
        max_tokens=MAX_TOKENS, temperature=temperature, seed=seed,
        regex=constrained.DSL_REGEX))
    for out in outs:
      assert out.finish_reason == "stop", out.text
      parse(out.text)  # raises ParseError otherwise


def test_constrained_policy_is_raw_valid_in_the_closed_loop(setup):
  eps, tok, untrained = setup
  llm = learned.flax_llm(untrained[0], tok)
  free = protocol.run_forward(eps, learned.LearnedPolicy(llm, max_new_tokens=64))
  assert not any(r.raw_valid for r in free)  # an untrained model writes no DSL by itself
  recs = protocol.run_forward(eps, learned.LearnedPolicy(llm, max_new_tokens=MAX_TOKENS,
                                                         constrained=True))
  assert all(r.raw_valid for r in recs)
  assert {r.failure_code for r in recs} <= {"CONTRACT_REJECT", ""}


def test_openai_http_sends_the_regex_to_the_server(setup):
  eps, tok, untrained = setup
  server = OpenAIServer(learned.flax_llm(untrained[1], tok), "accord",
                        limits=ServerLimits(max_new_tokens=MAX_TOKENS,
                                            max_prompt_tokens=4096)).start()
  try:
    policy = learned.LearnedPolicy(OpenAIBackend(server.url, "accord", timeout_s=300,
                                                 max_retries=0), max_new_tokens=MAX_TOKENS,
                                   constrained=True)
    for text in policy.generate_raw([E.sender_context(ep) for ep in eps[:4]],
                                    policy.commit_params):
      parse(text)
    with pytest.raises(ParseError):  # unconstrained, the same model writes no DSL
      parse(policy.generate_raw([E.sender_context(eps[0])])[0])
  finally:
    server.shutdown()
