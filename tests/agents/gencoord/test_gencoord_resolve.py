"""Resolve→ / Resolve← conditions and the materializer's canonical-object check."""
from agents.gencoord import capability, suites, templates
from agents.gencoord.dsl import parse
from agents.gencoord.materialize import MaterializationError, materialize
from agents.gencoord.resolve import (Commitment, Conflict, join, resolve_feedback,
                                     resolve_forward, resolve_self_plans)
from agents.gencoord.skills import normalize_path

SND = ("SELF resource.obtain(q=8,item=oak_planks) > "
       "resource.deliver(q=8,item=oak_planks,to=agent_b)\n"
       "REQ agent_b craft.item(bind=WORK_BRANCH,q=1,input=oak_planks,item=crafting_table)")
RCV = "SELF craft.item(bind=WORK_BRANCH,q=1,input=oak_planks,item=crafting_table)\nREQ -"


def test_forward_resolves_with_defaults_and_aliases():
  # Receiver omits defaulted fields (q=1, input) and uses an alias key: same normal form.
  rcv = parse("SELF craft.item(binding_id=WORK_BRANCH,item=crafting_table)\nREQ -")
  c = resolve_forward(parse(SND), rcv, "agent_a", "agent_b")
  assert isinstance(c, Commitment) and c.binding == "WORK_BRANCH"
  assert c.handoff == (("S", 1), ("R", 0), "oak_planks", 8)
  assert (("S", 1), ("R", 0)) in c.edges and (("S", 0), ("S", 1)) in c.edges


def test_forward_conflicts():
  q = parse(SND)
  cases = {
      "targets": resolve_forward(q, parse(RCV), "agent_a", "agent_c"),
      "realize": resolve_forward(q, parse(RCV.replace("q=1", "q=2")), "agent_a", "agent_b"),
      "non-empty SELF": resolve_forward(q, parse("SELF -\nREQ -"), "agent_a", "agent_b"),
      "exactly one": resolve_forward(parse(SND.split("\n")[0] + "\nREQ -"), parse(RCV),
                                     "agent_a", "agent_b"),
  }
  for why, c in cases.items():
    assert isinstance(c, Conflict) and why in c.reason, (why, c)


def test_handoff_compatibility_and_cycles():
  n = lambda text, a: normalize_path(parse(text).self_plan, a)  # noqa: E731
  rcv = n(RCV, "agent_b")
  short = n("SELF resource.obtain(q=2,item=oak_planks) > "
            "resource.deliver(q=8,item=oak_planks,to=agent_b)\nREQ -", "agent_a")
  assert "yields 2" in join(short, rcv, "agent_a", "agent_b", "t").reason
  wrong_item = n("SELF resource.obtain(q=8,item=stick) > "
                 "resource.deliver(q=8,item=stick,to=agent_b)\nREQ -", "agent_a")
  assert "never consumes" in join(wrong_item, rcv, "agent_a", "agent_b", "t").reason
  too_few = n("SELF resource.obtain(q=2,item=oak_planks) > "
              "resource.deliver(q=2,item=oak_planks,to=agent_b)\nREQ -", "agent_a")
  assert "receives 2" in join(too_few, rcv, "agent_a", "agent_b", "t").reason
  two_binds = n("SELF resource.obtain(bind=STORAGE_BRANCH,q=8,item=oak_planks) > "
                "resource.deliver(q=8,item=oak_planks,to=agent_b)\nREQ -", "agent_a")
  assert "multiple" in join(two_binds, rcv, "agent_a", "agent_b", "t").reason
  # The sender needs sticks back before it can hand off: a cross-agent cycle.
  snd = n("SELF resource.obtain(q=8,item=oak_planks) > craft.item(q=1,item=wooden_pickaxe) > "
          "resource.deliver(q=5,item=oak_planks,to=agent_b)\nREQ -", "agent_a")
  back = n("SELF craft.item(q=4,item=stick) > resource.deliver(q=4,item=stick,to=agent_a)\n"
           "REQ -", "agent_b")
  assert "cycle" in join(snd, back, "agent_a", "agent_b", "t").reason


def test_self_plans_join_and_materializer_canonical_check():
  ep = next(e for e in suites.forward("heldout") if e.template == "deposit_or_build"
            and e.binding == "DEPOSIT")
  tmpl = templates.get(ep.template)
  q_snd = parse(ep_text := _proposal_text(ep, ep.binding))
  wrong = parse(_receiver_text(ep, "BUILD"))
  held = ep.inventory(ep.sender)
  c = resolve_self_plans(q_snd, wrong, ep.sender, ep.receiver, held)
  assert isinstance(c, Commitment) and c.binding == "BUILD"
  d = materialize(c, tmpl, ep.layout, ep.goal_count)
  assert isinstance(d, MaterializationError) and "canonical" in d.reason
  right = resolve_forward(q_snd, parse(_receiver_text(ep, "DEPOSIT")), ep.sender, ep.receiver,
                          held)
  plan = materialize(right, tmpl, ep.layout, ep.goal_count, "x")
  assert [t.task_id for t in plan.tasks] == ["x/S0", "x/S1", "x/S2", "x/R0"]
  assert plan.tasks[2].check.taker == ep.receiver and plan.tasks[3].preds == ("x/S2",)
  assert plan.tasks[0].location == "quarry" and plan.tasks[1].location == "site_a"
  assert ep_text


def _proposal_text(ep, b):
  from agents.gencoord.policies.composer import proposal_text
  return proposal_text(ep.branch(b), ep.receiver)


def _receiver_text(ep, b):
  from agents.gencoord.policies.composer import self_text
  return self_text(ep.branch(b).receiver_path)


def test_feedback_resolution_branch_rules():
  ep = next(e for e in suites.capability_suite() if e.peer_mode == "FINISHED_RECEIVER"
            and e.inventory(e.sender).get("oak_planks"))
  tmpl = templates.get(ep.template)
  q0 = parse(_proposal_text(ep, "PEER_CRAFTS"))
  q_fin = parse(_proposal_text(ep, "REQUESTER_CRAFTS"))
  k, held = ep.goal_count, ep.inventory(ep.sender)
  counter = capability.respond(tmpl, q0.peer_requests[0], ep.sender, ep.receiver, ep.peer_mode,
                               k)
  assert counter.decision == "COUNTER"
  assert counter.counter_offer_id == "CRAFT_AT_REQUESTER_HANDOFF_FINISHED"
  c = resolve_feedback(tmpl, q0, counter, q_fin, ep.sender, ep.receiver, k, held)
  assert isinstance(c, Commitment) and c.binding == "REQUESTER_CRAFTS"
  assert isinstance(resolve_feedback(tmpl, q0, counter, q0, ep.sender, ep.receiver, k, held),
                    Conflict)
  accept = capability.Response("ACCEPT", "LOCAL_WORKCELL_CAN_PROCESS")
  assert resolve_feedback(tmpl, q0, accept, q0, ep.sender, ep.receiver, k,
                          held).binding == "PEER_CRAFTS"
  # The planks handoff counts the requester's starting holdings: without them its obtain
  # (net of them) yields too little to hand off.
  assert "holds and yields" in resolve_feedback(tmpl, q0, accept, q0, ep.sender, ep.receiver,
                                                k).reason
  # A request at another goal count asks for no branch of this world.
  assert capability.respond(tmpl, q0.peer_requests[0], ep.sender, ep.receiver, ep.peer_mode,
                            k + 1).decision == "REJECT"
  # Changing the goal (sticks instead of a table) is not a legal revision.
  other = templates.get("capability_stick").branch("REQUESTER_CRAFTS", ep.sender, ep.receiver)
  from agents.gencoord.policies.composer import proposal_text
  assert isinstance(resolve_feedback(tmpl, q0, counter, parse(proposal_text(other, ep.receiver)),
                                     ep.sender, ep.receiver, k, held), Conflict)
  assert capability.response_valid(counter) and counter.wire().startswith('{"decision"')
