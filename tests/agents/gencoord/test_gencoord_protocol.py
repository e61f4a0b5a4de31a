"""Closed loops (Algorithms S1/S2): every failure code, NoCommitment, and the exact results."""
import dataclasses
import re

import pytest

from agents.gencoord import capability, protocol, suites
from agents.gencoord.policies import registry as policies
from agents.gencoord.policies.composer import ProgramPolicy
from agents.gencoord.metrics import branch_fields, commitment_fields
from envs.minecraft.layout import make_layout
from envs.minecraft.world import Layout


class Scripted:
  """A backend whose output is a function of the context (stands in for a bad model)."""
  name, learned_calls, surface = "scripted", 1, "dsl"

  def __init__(self, fn):
    self.fn, self.seen = fn, []

  def generate(self, contexts):
    self.seen.append(len(contexts))
    return [self.fn(c) for c in contexts]


PROGRAM = ProgramPolicy()


def _program_then(edit_sender=None, edit_receiver=None):
  def fn(ctx):
    text = PROGRAM.generate([ctx])[0]
    if ctx.stage == "sender_initial" and edit_sender:
      return edit_sender(text)
    if ctx.stage == "receiver_after_request" and edit_receiver:
      return edit_receiver(text)
    return text
  return Scripted(fn)


@pytest.fixture(scope="module")
def episode():
  ep = next(e for e in suites.forward("intervention")
            if e.template == "active_order" and e.binding == "WORK_BRANCH" and e.role_view == 0)
  return ep


def _code(ep, backend, condition="true"):
  (rec,) = protocol.run_forward([ep], backend, condition)
  return rec


def test_success_record(episode):
  rec = _code(episode, PROGRAM)
  assert rec.success and rec.failure_code == "" and rec.raw_valid and rec.handoff_verified
  assert rec.model_calls == 2 and rec.executor_actions > 0
  assert rec.wire_bytes == len(rec.texts[0].split("\n")[1].encode())
  assert rec.commitment.binding == "WORK_BRANCH"


def _with_layout(ep, layout):
  return dataclasses.replace(ep, layout=layout)


def _no_pickaxe(layout: Layout, agent: str) -> Layout:
  starts = dict(layout.agent_starts)
  pos, _, mode = starts[agent]
  starts[agent] = (pos, (), mode)
  return dataclasses.replace(layout, agent_starts=starts)


def _more(text: str, prefix: str) -> str:
  """`text` with the quantity after `prefix` raised by 4 (the facts set the quantity)."""
  assert prefix in text, (prefix, text)
  return re.sub(re.escape(prefix) + r"(\d+)", lambda m: f"{prefix}{int(m.group(1)) + 4}", text,
                count=1)


def forward_failures(ep):
  """(expected code, record) for one scripted scenario per failure code."""
  chest = next(e for e in suites.forward("intervention") if e.template == "chest_ab")
  yield "PARSE_FAILURE", _code(ep, _program_then(edit_sender=lambda t: t + " trailing"))
  yield "CONTRACT_REJECT", _code(ep, _program_then(
      edit_sender=lambda t: t.replace("REQ agent_b", "REQ agent_z")))
  yield "CONTRACT_REJECT", _code(ep, _program_then(edit_sender=lambda t: t.split("\n")[0] +
                                                   "\nREQ -"))
  yield "CONTRACT_REJECT", _code(ep, _program_then(edit_receiver=lambda t: t.replace(
      "REQ -", "REQ agent_a control.wait()")))
  yield "RESOLUTION_CONFLICT", _code(ep, _program_then(
      edit_receiver=lambda t: _more(t, "craft.item(bind=WORK_BRANCH,q=")))
  yield "MATERIALIZATION_FAILURE", _code(
      _with_layout(ep, make_layout(ep.variant, omit=("forest",))), PROGRAM)
  yield "MATERIALIZATION_FAILURE", _code(ep, _program_then(   # valid but not canonical
      edit_sender=lambda t: _more(t, "resource.obtain(q=")))
  yield "EXECUTION_FAILURE", _code(_with_layout(chest, _no_pickaxe(chest.layout, chest.sender)),
                                   PROGRAM)
  yield "HANDOFF_FAILURE", _code(
      _with_layout(ep, ep.layout.with_mode(ep.receiver, "FINISHED_RECEIVER")), PROGRAM)
  yield "TERMINAL_FAILURE", _code(ep, PROGRAM, "alternative")


def test_every_forward_failure_code(episode):
  reached = set()
  for code, rec in forward_failures(episode):
    assert rec.failure_code == code, (code, rec.result)
    assert isinstance(rec.result, protocol.Fail) and not rec.success
    reached.add(code)
  assert reached == set(protocol.FAIL_CODES)


def test_parse_failure_marks_raw_invalid_and_stops(episode):
  backend = Scripted(lambda ctx: "not a program")
  rec = _code(episode, backend)
  assert not rec.raw_valid and rec.model_calls == 1 and backend.seen == [1, 0]


def test_unknown_condition_and_failure_code_raise(episode):
  with pytest.raises(ValueError):
    protocol.run_forward([episode], PROGRAM, "teleport")
  with pytest.raises(ValueError):
    protocol.Fail("OOPS")


@pytest.fixture(scope="module")
def cap_episode():
  return next(e for e in suites.capability_suite() if e.peer_mode == "FINISHED_RECEIVER")


def test_feedback_reject_is_no_commitment(cap_episode):
  def fn(ctx):     # request a path that matches no public branch: the policy rejects it
    text = PROGRAM.generate([ctx])[0]
    return text.replace("dst=order_chest", "dst=chest_a")
  (rec,) = protocol.run_feedback([cap_episode], Scripted(fn), "correct")
  assert isinstance(rec.result, protocol.NoCommitment)
  assert rec.result.reason == "NO_ADMISSIBLE_BRANCH" and rec.model_calls == 1


def test_feedback_invalid_response_is_contract_reject(cap_episode):
  for bad in (capability.Response("MAYBE", "X"), capability.Response("ACCEPT", "X", "ALT"),
              capability.Response("COUNTER", "X", "NOT_AN_OFFER"), capability.Response(
                  "COUNTER", "", "CRAFT_AT_REQUESTER_HANDOFF_FINISHED")):
    (rec,) = protocol.run_feedback([cap_episode], PROGRAM, "correct",
                                   response_override=lambda rho, ep, bad=bad: bad)
    assert rec.failure_code == "CONTRACT_REJECT"
  (rec,) = protocol.run_feedback([cap_episode], PROGRAM, "correct",
                                 response_override=lambda rho, ep: capability.Response(
                                     "REJECT", "OPERATOR_CLOSED"))
  assert isinstance(rec.result, protocol.NoCommitment)


def test_feedback_revision_ignoring_counter_conflicts(cap_episode):
  def fn(ctx):     # after the COUNTER, keep proposing the initial (peer-crafts) branch
    if ctx.stage == "requester_after_response":
      return ctx.history[0]
    return PROGRAM.generate([ctx])[0]
  (rec,) = protocol.run_feedback([cap_episode], Scripted(fn), "correct")
  assert rec.failure_code == "RESOLUTION_CONFLICT"
  (rec,) = protocol.run_feedback([cap_episode], Scripted(
      lambda c: PROGRAM.generate([c])[0].replace("REQ agent_b", "REQ agent_a")
      if c.stage == "requester_after_response" else PROGRAM.generate([c])[0]), "correct")
  assert rec.failure_code == "CONTRACT_REJECT"


def _rate(recs):
  return 100.0 * sum(r.success for r in recs) / len(recs)


def test_request_intervention_exact():
  eps = suites.forward("intervention")
  assert len(eps) == 320
  program = policies.make("program")
  got = {c: _rate(protocol.run_forward(eps, program, c)) for c in protocol.FORWARD_CONDITIONS}
  rule = protocol.run_forward(eps, policies.make("rule_minimal_request"), "true")
  assert got == {"true": 100.0, "removed": 50.0, "alternative": 0.0}
  assert _rate(rule) == 100.0 and all(r.model_calls == 0 for r in rule)
  # Removing the request exposes exactly one of each binding pair, in every template.
  removed = protocol.run_forward(eps, program, "removed")
  for template in suites.CORE:
    assert _rate([r for r in removed if r.ep.template == template]) == 50.0


def test_alternative_request_redirects_receiver_execution():
  eps = suites.forward("heldout")
  recs = protocol.run_forward(eps, policies.make("program"), "alternative")
  assert all(r.receiver_follows_request for r in recs)   # every receiver SELF = delivered REQ
  for rec in recs:
    if rec.commitment is not None:      # an executable plan formed: it follows the delivered REQ
      assert rec.commitment.binding != rec.ep.binding


def test_feedback_suite_exact_and_field_fidelity():
  eps = suites.capability_suite()
  program = policies.make("program")
  got = {c: _rate(protocol.run_feedback(eps, program, c)) for c in protocol.FEEDBACK_CONDITIONS}
  assert got == {"local": 50.0, "correct": 100.0, "counterfactual": 0.0, "centralized": 100.0}
  for rec in protocol.run_feedback(eps, program, "counterfactual"):
    other = "FINISHED_RECEIVER" if rec.ep.peer_mode == "RAW_PROCESSOR" else "RAW_PROCESSOR"
    fields = commitment_fields(rec.commitment)
    injected = branch_fields(rec.ep, capability.MODE_BRANCH[other])
    true = branch_fields(rec.ep, rec.ep.binding)
    for f in ("craft_actor", "handoff_item", "handoff_count", "peer_suffix"):
      assert fields[f] == injected[f] != true[f]
    assert (fields["goal_item"], fields["goal_count"]) == (true["goal_item"], true["goal_count"])
    assert rec.failure_code == "HANDOFF_FAILURE" and rec.model_calls == 2


def test_composition_case_table_vs_explicit_composer():
  from agents.gencoord import data
  from agents.gencoord.policies.lookup import CaseTable
  seen, unseen = suites.cross_product("seen"), suites.cross_product("unseen")
  rows = [(r.context, r.target) for r in data.forward_rows(seen)]
  table, composer = CaseTable(rows), policies.make("explicit_factor")
  assert _rate(protocol.run_forward(seen, table)) == 100.0          # it memorised these
  assert _rate(protocol.run_forward(unseen, table)) == 0.0
  assert _rate(protocol.run_forward(unseen, composer)) == 100.0
  assert len(suites.clusters(unseen)) == 60


def test_single_step_horizon_closes_with_three_calls():
  eps = suites.forward("heldout_template")
  recs = protocol.run_forward(eps, PROGRAM, "true", horizon="single")
  assert all(r.success and r.model_calls == 3 for r in recs)
  multi = protocol.run_forward(eps, PROGRAM, "true")
  assert all(r.model_calls == 2 for r in multi)
  # Same resolved commitment either way: the horizon changes when paths are decided.
  assert [r.commitment.sender_path for r in recs] == [r.commitment.sender_path for r in multi]


def test_single_step_contract_violations(episode):
  two_steps = Scripted(lambda c: PROGRAM.generate([c])[0] if c.prior.get("horizon") != "single"
                       or c.stage != "sender_initial" else
                       PROGRAM.generate([dataclasses.replace(c, prior={**c.prior,
                                                                       "horizon": "multi"})])[0])
  (rec,) = protocol.run_forward([episode], two_steps, "true", horizon="single")
  assert rec.failure_code == "CONTRACT_REJECT" and rec.model_calls == 1
  asks_again = Scripted(lambda c: PROGRAM.generate([c])[0].replace("REQ -", "REQ agent_b "
                                                                   "control.wait()")
                        if c.stage == "sender_after_obtain" else PROGRAM.generate([c])[0])
  (rec,) = protocol.run_forward([episode], asks_again, "true", horizon="single")
  assert rec.failure_code == "CONTRACT_REJECT" and rec.model_calls == 2
  with pytest.raises(ValueError):
    protocol.run_forward([episode], PROGRAM, "true", horizon="long")
