"""ContractCheck: each class of typed-schema violation, separate from parsing."""
import pytest

from agents.gencoord import suites
from agents.gencoord.contract import check_proposal, valid_proposal
from agents.gencoord.dsl import parse


@pytest.fixture(scope="module")
def pub():
  ep = next(e for e in suites.forward("heldout") if e.template == "active_order")
  return ep.public


GOOD = ("SELF resource.obtain(q=8,item=oak_planks) > "
        "resource.deliver(q=8,item=oak_planks,to=agent_b)\n"
        "REQ agent_b craft.item(bind=WORK_BRANCH,q=1,input=oak_planks,item=crafting_table)")


def test_valid_paper_proposal(pub):
  assert check_proposal(parse(GOOD), "agent_a", pub) == []


@pytest.mark.parametrize("old,new,why", [
    ("q=8,item=oak_planks)", "q=8,item=oak_planks,color=red)", "unknown key"),
    ("resource.obtain(q=8,", "resource.obtain(q=\"8\",", "positive integer"),
    ("resource.obtain(q=8,", "resource.obtain(q=0,", "positive integer"),
    ("resource.obtain(q=8,", "resource.obtain(q=-2,", "positive integer"),
    ("resource.obtain(q=8,", "resource.obtain(q=true,", "positive integer"),
    ("resource.obtain(q=8,", "resource.obtain(q=1.5,", "positive integer"),
    ("resource.obtain(q=8,item=oak_planks)", "resource.obtain(q=8,item=diamond)", "unknown item"),
    ("to=agent_b", "to=agent_q", "unknown agent"),
    ("to=agent_b", "to=agent_a", "own actor"),
    ("REQ agent_b", "REQ agent_c", "unknown peer"),
    ("REQ agent_b", "REQ agent_a", "from itself"),
    ("bind=WORK_BRANCH", "bind=SITE_A", "inadmissible binding"),
    ("resource.obtain(q=8,item=oak_planks)", "resource.obtain(item=oak_planks)", "missing"),
    ("item=crafting_table)", "item=crafting_table,station=site_a)", "not a station"),
    ("to=agent_b", "dst=nowhere", "not a container"),
    ("to=agent_b)", "to=agent_b,dst=order_chest)", "exactly one"),
    ("input=oak_planks", "input=cobblestone", "not in the recipe"),
    ("item=crafting_table", "item=oak_log", "no crafting recipe"),
])
def test_violations(pub, old, new, why):
  assert old in GOOD
  errors = check_proposal(parse(GOOD.replace(old, new, 1)), "agent_a", pub)
  assert any(why in e for e in errors), errors
  assert not valid_proposal(parse(GOOD.replace(old, new, 1)), "agent_a", pub)


def test_unknown_decision_agent_and_transform_schema(pub):
  assert check_proposal(parse(GOOD), "agent_x", pub)
  ok = parse("SELF transform.supply_input(q=4,item=cobblestone,station=furnace) > "
             "transform.supply_fuel(q=3,item=oak_planks,station=furnace) > "
             "transform.collect_output(q=4,item=stone,station=furnace)\nREQ -")
  assert check_proposal(ok, "agent_a", pub) == []
  bad = parse("SELF transform.supply_fuel(q=3,item=stone,station=furnace) > "
              "transform.supply_input(q=1,item=stick,station=furnace)\nREQ -")
  errors = check_proposal(bad, "agent_a", pub)
  assert any("not a fuel" in e for e in errors) and any("cannot be smelted" in e for e in errors)


def test_parse_accepts_what_contract_rejects(pub):
  # Parsing is syntactic: an unknown key parses fine and is rejected only by the checker.
  q = parse("SELF control.wait(colour=blue)\nREQ -")
  assert check_proposal(q, "agent_a", pub) == ["control.wait: unknown key 'colour'"]
