"""Commitment policies: registry, batching, rule semantics, TF-IDF neighbour, prompt adapter surfaces."""
import json

import pytest

from agents.gencoord import data, episode as E, protocol, suites
from agents.gencoord.policies import prompted, registry as policies
from agents.gencoord.policies.base import NO_PROPOSAL
from agents.gencoord.policies.lookup import TfidfNearest
from agents.gencoord.policies.prompted import PromptPolicy
from agents.gencoord.dsl import parse, request_line
from agents.gencoord.skills import normalize_path


def test_registry_lists_model_free_backends():
  assert {"program", "rule_minimal_request", "explicit_factor", "oracle_factors", "case_table",
          "tfidf_nn"} <= set(policies.names())
  with pytest.raises(KeyError):
    policies.make("gpt")
  with pytest.raises(ValueError):
    policies.register("program", object)


def test_backends_see_only_local_context_and_batch():
  eps = suites.forward("heldout")[:6]
  rule = policies.make("rule_minimal_request")
  out = rule.generate([E.sender_context(ep) for ep in eps])
  assert len(out) == 6 and rule.learned_calls == 0
  for ep, text in zip(eps, out):
    q = parse(text)
    assert q.peer_requests[0].target == ep.receiver
    assert f"bind={ep.binding}" in text
  # A receiver without a request falls back to the first public branch.
  ctx = E.receiver_context(eps[0], None)
  first = policies.make("program").generate([ctx])[0]
  assert f"bind={E.sender_context(eps[0]).prior['codebook'][0]}" in first


def test_program_receiver_copies_delivered_request_rule_recomposes():
  ep = suites.forward("heldout")[0]
  program, rule = policies.make("program"), policies.make("rule_minimal_request")
  req = request_line(parse(program.generate([E.sender_context(ep)])[0]))
  ctx = E.receiver_context(ep, req)
  assert program.generate([ctx]) == rule.generate([ctx])
  broken = E.receiver_context(ep, "REQ agent_a ((")
  assert program.generate([broken]) == [NO_PROPOSAL]


def test_tfidf_neighbour_recovers_in_template_bindings():
  train = suites.forward("train")
  rows = [(r.context, r.binding) for r in data.forward_rows(train)
          if r.stage == "sender_initial"]
  nn = TfidfNearest(rows)
  recs = protocol.run_forward(suites.forward("heldout"), nn)
  assert all(r.success for r in recs)
  assert TfidfNearest([]).sender_binding(E.sender_context(train[0])) is None


def _key(prompt: str) -> tuple:
  """Prompt identity up to the delivered request's surface form (compared semantically)."""
  lines = prompt.split("\n")
  incoming = [ln[len("incoming: "):] for ln in lines if ln.startswith("incoming: ")]
  agent = next(ln for ln in lines if ln.startswith("agent: "))[len("agent: "):]
  req = None
  if incoming:
    r = parse("SELF -\n" + incoming[0]).peer_requests[0]
    req = normalize_path(r.requested_plan, agent)
  return tuple(ln for ln in lines if not ln.startswith("incoming: ")), req


@pytest.mark.parametrize("surface", ["dsl", "json", "factor"])
def test_prompt_backend_surfaces_close_the_loop(surface):
  """A 'model' that answers with the data builder's target for the prompt it is shown.
  (Free-form is a multi-turn dialogue: test_gencoord_dialogue.py.)"""
  eps = suites.forward("heldout")[:16]
  rows = data.forward_rows(eps, surface)
  answer = {_key(r.prompt): r.target for r in rows}
  calls = []

  def generate_texts(prompts):
    calls.append(len(prompts))
    return [answer.get(_key(p), "???") for p in prompts]
  backend = PromptPolicy(generate_texts, name=f"oracle_{surface}", surface=surface)
  recs = protocol.run_forward(eps, backend)
  assert all(r.success for r in recs) and calls == [16, 16]
  assert all(r.model_calls == 2 for r in recs)
  wire = {r.ep.episode_id: r.wire_bytes for r in recs}
  for row in rows:
    if row.stage != "sender_initial":
      continue
    if surface == "dsl":
      expect = row.target.split("\n")[1]
    elif surface == "json":
      expect = json.dumps(json.loads(row.target)["req"], separators=(",", ":"))
    else:                                      # factor codes deliver the composed DSL request
      expect = _dsl_request(row)
    assert wire[row.episode_id] == len(expect.encode())


def _dsl_request(row):
  return request_line(parse(prompted.to_short_dsl(row.context, row.target, "factor")))


def test_prompt_backend_undecodable_output_is_parse_failure():
  eps = suites.forward("heldout")[:2]
  for surface in ("json", "freeform", "factor"):
    backend = PromptPolicy(lambda ps: ["garbage"] * len(ps), surface=surface)
    recs = protocol.run_forward(eps, backend)
    assert {r.failure_code for r in recs} == {"PARSE_FAILURE"}
  with pytest.raises(ValueError):
    PromptPolicy(lambda ps: [], surface="morse")
  with pytest.raises(ValueError, match="0 outputs"):
    protocol.run_forward(eps, PromptPolicy(lambda ps: []))
