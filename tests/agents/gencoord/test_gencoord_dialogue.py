"""Controlled free-form dialogue: turn grammar, schedule, supervision rows, closed loop."""
import collections
import dataclasses

import numpy as np
import pytest

from agents.gencoord import data, dialogue, protocol, suites, surfaces
from agents.gencoord.policies import registry as policies
from agents.gencoord.policies.prompted import PromptPolicy
from agents.gencoord.dsl import ParseError, parse
from agents.gencoord.skills import normalize_path


@pytest.fixture(scope="module")
def train_rows():
  return data.forward_rows(suites.forward("train"), "freeform")


def test_train_suite_gives_the_matched_sft_budget(train_rows):
  """Table S6: 2,400 rows = 1,200 sender + 1,200 receiver (300 steps at batch 16, 2 epochs)."""
  stages = collections.Counter(r.stage for r in train_rows)
  assert stages == {"sender_initial": 960, "receiver_after_request": 960,
                    "sender_intent": 240, "receiver_query": 240}
  assert sum(r.stage.startswith("sender") for r in train_rows) == 1200
  assert sum(r.stage.startswith("receiver") for r in train_rows) == 1200
  assert 2 * len(train_rows) // 16 == 300
  assert all(data.validate(r) for r in train_rows)


def test_every_turn_type_round_trips_through_the_extractor(train_rows):
  kinds = {"sender_intent": "intent", "receiver_query": "state", "sender_initial": "proposal",
           "receiver_after_request": "proposal"}
  for row in train_rows:
    turn = dialogue.decode_turn(row.target)
    assert turn.kind == kinds[row.stage]
    ctx = row.context
    if row.stage == "receiver_query":
      assert turn.payload == dict(ctx.observation["inventory"])
      assert dialogue.encode_state(turn.payload) == row.target
    elif row.stage == "sender_intent":
      assert dialogue.encode_intent(turn.payload, ctx.peer) == row.target
    else:
      assert surfaces.encode_freeform(turn.payload) == row.target
  assert dialogue.decode_turn(dialogue.encode_state({})).payload == {}
  assert dialogue.decode_turn(dialogue.encode_intent((), "agent_b")).payload == ()
  for bad in ("I hold 0 stick. What do you need from me?",
              "I hold 2 stick, 3 stick. What do you need from me?",
              "I plan to fly away. agent_b, what do you hold?", "hello", None):
    with pytest.raises(ParseError):
      dialogue.decode_turn(bad)


def test_schedule_is_answer_independent_and_a_quarter_of_every_pool():
  for name in ("train", "heldout", "intervention"):
    eps = suites.forward(name)
    assert sum(dialogue.rounds(e) == 2 for e in eps) * 4 == len(eps)
  vis = suites.visibility("full")
  assert sum(dialogue.rounds(e) == 2 for e in vis) * 4 == len(vis)
  # Both bindings of a binding pair (same world variant, role view) share the schedule.
  by_pair = collections.defaultdict(set)
  for e in suites.forward("train"):
    by_pair[(e.template, e.variant, e.role_view)].add((e.binding, dialogue.rounds(e)))
  assert all(len({r for _, r in v}) == 1 and len(v) == 2 for v in by_pair.values())


def test_turn_contexts_carry_the_earlier_dialogue():
  ep = next(e for e in suites.forward("heldout") if dialogue.rounds(e) == 2)
  turns = dialogue.gold_dialogue(ep)
  assert [s for s, _, _ in turns] == list(dialogue.TWO_ROUNDS)
  (_, c0, t0), (_, c1, t1), (_, c2, t2), (_, c3, _) = turns
  assert c0.history == () and c0.incoming is None and c0.agent == ep.sender
  assert c1.agent == ep.receiver and c1.incoming == t0 and c1.history == ()
  assert c2.history == (f"{ep.sender}: {t0}",) and c2.incoming == t1
  assert c3.history == (f"{ep.sender}: {t0}", f"{ep.receiver}: {t1}") and c3.incoming == t2
  assert "active_binding" in c2.observation and "active_binding" not in c3.observation
  q_snd, q_rcv = dialogue.extract([t for _, _, t in turns])
  br = ep.branch()
  assert normalize_path(q_snd.self_plan, ep.sender) == normalize_path(br.sender_path, ep.sender)
  assert normalize_path(q_rcv.self_plan, ep.receiver) == normalize_path(br.receiver_path,
                                                                        ep.receiver)
  with pytest.raises(ParseError, match="no commitment"):
    dialogue.extract([t for _, _, t in turns][:3])
  with pytest.raises(ParseError, match="no request"):
    dialogue.extract([t for _, _, t in turns][:2])
  with pytest.raises(ValueError):
    dialogue.context(ep, "sender_shout", [])


def test_program_reaches_full_success_through_the_multi_turn_loop():
  eps = suites.forward("heldout")
  recs = protocol.run_forward(eps, dialogue.Speaker(policies.make("program")))
  assert all(r.success and r.raw_valid and r.receiver_follows_request for r in recs)
  assert np.mean([r.model_calls for r in recs]) == 2.5
  dsl = {r.ep.episode_id: r.wire_bytes for r in protocol.run_forward(eps,
                                                                   policies.make("program"))}
  for r in recs:
    assert r.model_calls == 2 * dialogue.rounds(r.ep) == len(r.texts)
    assert r.wire_bytes == sum(len(t.encode()) for t in r.texts) > dsl[r.ep.episode_id]
  with pytest.raises(ValueError, match="true request condition"):
    protocol.run_forward(eps[:2], dialogue.Speaker(policies.make("program")), "removed")


def test_prompt_backend_dialogue_batches_turns_and_matches_gold_prompts():
  eps = suites.forward("heldout")[:32]
  answer = {r.prompt: r.target for r in data.dialogue_rows(eps)}
  sizes = []

  def generate_texts(prompts):
    sizes.append(len(prompts))
    return [answer[p] for p in prompts]
  recs = protocol.run_forward(eps, PromptPolicy(generate_texts, surface="freeform"))
  assert all(r.success for r in recs) and sizes == [32, 32, 8, 8]


def _scripted(reply):
  """A free-form backend whose turns are reply(context) (else the program speaker's)."""
  speaker = dialogue.Speaker(policies.make("program"))

  def generate_texts(contexts):
    return [reply(c) or speaker.generate_raw([c])[0] for c in contexts]
  return PromptPolicy(generate_texts, surface="freeform", render=lambda c: c)


def test_failures_are_recorded_never_raised():
  eps = [e for e in suites.forward("heldout")[:32] if dialogue.rounds(e) == 2][:4]
  # An undecodable state reply ends the dialogue after two calls.
  recs = protocol.run_forward(eps, _scripted(
      lambda c: "sure thing" if c.stage == "receiver_query" else None))
  assert all(r.failure_code == "PARSE_FAILURE" and r.model_calls == 2 and not r.raw_valid
             for r in recs)
  assert all("turn 1" in r.result.detail for r in recs)
  # Decodable turns from which no request can be extracted: an extraction failure.
  recs = protocol.run_forward(eps, _scripted(
      lambda c: dialogue.encode_intent((), c.peer) if c.stage == "sender_initial" else None))
  assert all(r.failure_code == "PARSE_FAILURE" and "extraction" in r.result.detail
             and r.model_calls == 4 for r in recs)
  # A request addressed to the wrong agent fails the typed contract.
  def wrong_peer(c):
    if c.stage != "sender_initial":
      return None
    q = parse(policies.make("program").generate([dataclasses.replace(c, history=(),
                                                                     incoming=None)])[0])
    return surfaces.encode_freeform(dataclasses.replace(q, peer_requests=(
        dataclasses.replace(q.peer_requests[0], target="agent_z"),)))
  recs = protocol.run_forward(eps, _scripted(wrong_peer))
  assert {r.failure_code for r in recs} == {"CONTRACT_REJECT"}
  # The speaker hands its inner receiver no request when the incoming turn is undecodable.
  ctx = dialogue.context(eps[0], "receiver_after_request", ["garbled"])
  assert dialogue.decode_turn(dialogue.Speaker(policies.make("program")).generate_raw(
      [ctx])[0]).payload.self_plan == ()
