"""Short DSL codec: paper examples, every parse-failure class, canonical form, properties."""
import json
import re

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from agents.gencoord import dsl
from agents.gencoord.dsl import ParseError, PeerRequest, Proposal, Task, parse, serialize

PAPER_FORWARD = ("SELF resource.obtain(q=8,item=oak_planks) > "
                 "resource.deliver(q=8,item=oak_planks,to=agent_b)\n"
                 "REQ agent_b craft.item(bind=WORK_BRANCH,q=1,input=oak_planks,"
                 "item=crafting_table)")
PAPER_COUNTER = ("SELF craft.item(q=1,input=oak_planks,item=crafting_table) > "
                 "resource.deliver(q=1,item=crafting_table,to=agent_b)\n"
                 "REQ agent_b resource.deliver(q=1,item=crafting_table,dst=order_chest)")


def test_paper_examples_round_trip_byte_identical():
  for text in (PAPER_FORWARD, PAPER_COUNTER):
    assert serialize(parse(text)) == text


def test_paper_example_fields():
  q = parse(PAPER_FORWARD)
  assert [t.skill for t in q.self_plan] == ["resource.obtain", "resource.deliver"]
  assert q.self_plan[1].args == {"q": 8, "item": "oak_planks", "to": "agent_b"}
  (req,) = q.peer_requests
  assert req.target == "agent_b"
  assert req.requested_plan[0].args["bind"] == "WORK_BRANCH"
  assert type(req.requested_plan[0].args["q"]) is int


def test_empty_lines_and_req_dash():
  assert parse("SELF -\nREQ -") == Proposal((), ())
  q = parse("SELF control.wait()\nREQ -")
  assert q.peer_requests == () and q.self_plan == (Task("control.wait", {}),)


def test_aliases_are_canonicalised_and_emitted_compact():
  text = ("SELF resource.deliver(quantity=2,item=stick,target_agent_ref=agent_b,from_agent_id=x,"
          "location_ref=forest,destination_role=peer)\nREQ agent_b "
          "resource.deliver(binding_id=B1,count=3,item=stick,destination=order_chest)")
  q = parse(text)
  assert set(q.self_plan[0].args) == {"q", "item", "to", "from", "loc", "dst_role"}
  assert serialize(q) == ("SELF resource.deliver(q=2,item=stick,to=agent_b,from=x,dst_role=peer,"
                          "loc=forest)\nREQ agent_b resource.deliver(bind=B1,q=3,item=stick,"
                          "dst=order_chest)")
  assert parse("SELF -\nREQ b craft.item(to_agent_id=a)").peer_requests[0].requested_plan[0] \
      .args == {"to": "a"}


def test_serializer_key_order_and_unknown_keys_sorted():
  t = Task("build.component", {"zeta": 1, "station": "s", "component": "roof", "site": "x",
                               "bind": "B", "alpha": 2, "q": 4})
  assert dsl.serialize_task(t) == ("build.component(bind=B,q=4,site=x,station=s,alpha=2,"
                                   "component=roof,zeta=1)")


def test_value_priority_strings_numbers_literals_atoms():
  q = parse('SELF craft.item(a="x,y)\\" > z",b=12,c=-1.5e2,d=true,e=null,f=1.21.4,g=8x,'
            'h="\\u00e9",i=false)\nREQ -')
  args = q.self_plan[0].args
  assert args == {"a": 'x,y)" > z', "b": 12, "c": -150.0, "d": True, "e": None, "f": "1.21.4",
                  "g": "8x", "h": "\u00e9", "i": False}
  assert type(args["b"]) is int and type(args["c"]) is float


def test_strings_that_look_like_numbers_or_literals_are_quoted():
  q = Proposal((Task("control.wait", {"a": "8", "b": "true", "c": "", "d": "has space",
                                      "e": "ok_atom"}),), ())
  text = serialize(q)
  assert 'a="8"' in text and 'b="true"' in text and 'c=""' in text
  assert 'd="has space"' in text and "e=ok_atom" in text
  assert parse(text) == q


def test_noncanonical_whitespace_is_tolerated():
  messy = (" SELF   resource.obtain( q = 8 , item = oak_planks )  >resource.deliver(q=8,"
           "item=oak_planks,to=agent_b)\t\r\nREQ   agent_b  craft.item( bind=WORK_BRANCH ,q=1,"
           "input=oak_planks , item=crafting_table ) \n")
  assert serialize(parse(messy)) == PAPER_FORWARD


@pytest.mark.parametrize("text,why", [
    ("SELF -", "two lines"),
    ("SELF -\nREQ -\nREQ -", "two lines"),
    ("SELF -\n\nREQ -", "two lines"),
    ("REQ -\nSELF -", "SELF"),
    ("SELF -\nSELF -", "REQ"),
    ("SELF -\nREQ agent_b", "empty requested plan"),
    ("SELF -\nREQ agent_b   ", "empty requested plan"),
    ("SELF \nREQ -", "empty SELF"),
    ("SELF " + " > ".join(["control.wait()"] * 6) + "\nREQ -", "more than 5"),
    ("SELF -\nREQ b " + " > ".join(["control.wait()"] * 6), "more than 5"),
    ("SELF craft.item(q=1,q=2)\nREQ -", "duplicate key"),
    ("SELF craft.item(q=1,count=2)\nREQ -", "duplicate key"),
    ("SELF craft.make(q=1)\nREQ -", "outside the catalog"),
    ("SELF craft.item(item=oak planks)\nREQ -", "expected ',' or ')'"),
    ("SELF craft.item(item=@x)\nREQ -", "invalid value"),
    ("SELF craft.item(item=)\nREQ -", "invalid value"),
    ('SELF craft.item(item="abc)\nREQ -', "unterminated"),
    ('SELF craft.item(item="a\\qb")\nREQ -', "escape"),
    ("SELF craft.item(q=1) extra\nREQ -", "trailing text"),
    ("SELF craft.item(q=1) >\nREQ -", "skill name"),
    ("SELF -\nREQ - extra", "outside the catalog"),
    ("SELF -\nREQ @b control.wait()", "request target"),
    ("SELF craft.item(q=1e999)\nREQ -", "out of range"),
    ("SELFcraft.item()\nREQ -", "whitespace"),
    ("SELF craft.item(1=2)\nREQ -", "argument key"),
    ("SELF craft.item(q=1\nREQ -", "expected ',' or ')'"),
])
def test_parse_failures(text, why):
  with pytest.raises(ParseError, match=re.escape(why)):
    parse(text)


@pytest.mark.parametrize("bad", [None, 3, b"SELF -\nREQ -", ["SELF -", "REQ -"]])
def test_non_strings_raise_parse_error(bad):
  with pytest.raises(ParseError):
    parse(bad)


def test_serialize_rejects_illegal_objects():
  with pytest.raises(ValueError):
    serialize(Proposal((), (PeerRequest("b", ()),)))
  with pytest.raises(ValueError):
    serialize(Proposal((), (PeerRequest("a b", (Task("control.wait"),)),)))
  with pytest.raises(ValueError):
    serialize(Proposal((Task("control.wait", {"x": float("nan")}),), ()))


# ----------------------------------------------------------------------------- properties
_KEYS = st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,6}", fullmatch=True)
_VALUES = st.one_of(st.text(max_size=12), st.integers(-10**12, 10**12),
                    st.floats(allow_nan=False, allow_infinity=False), st.booleans(), st.none(),
                    st.from_regex(r"[A-Za-z0-9_.:/+\-]{1,10}", fullmatch=True))


@st.composite
def _tasks(draw):
  raw = draw(st.dictionaries(_KEYS, _VALUES, max_size=5))
  args = {}
  for k, v in raw.items():
    args.setdefault(dsl.ALIASES.get(k, k), v)     # drop alias collisions: keep the first
  return Task(draw(st.sampled_from(dsl.SKILLS)), args)


_PATHS = st.lists(_tasks(), min_size=1, max_size=5).map(tuple)
_AGENTS = st.from_regex(r"[A-Za-z_][A-Za-z0-9_.:/+\-]{0,8}", fullmatch=True).filter(
    lambda a: dsl._is_bare(a))


@st.composite
def _proposals(draw):
  self_plan = draw(st.one_of(st.just(()), _PATHS))
  reqs = draw(st.one_of(st.just(()), st.tuples(st.builds(PeerRequest, _AGENTS, _PATHS))))
  return Proposal(self_plan, reqs)


def _typed(q):
  """Structure with value types made explicit (1 == 1.0 == True in plain Python)."""
  tasks = lambda ts: [(t.skill, [(k, type(v).__name__, json.dumps(v)) for k, v in t.args.items()])
                      for t in ts]
  return tasks(q.self_plan), [(r.target, tasks(r.requested_plan)) for r in q.peer_requests]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_proposals())
def test_round_trip_property(q):
  text = serialize(q)
  back = parse(text)
  assert back == q and _typed(back) == _typed(q)
  assert serialize(back) == text
  assert text == text.strip() and text.count("\n") == 1 and text.isascii()


def _mutations(text: str):
  return st.one_of(
      st.text(max_size=80),
      st.tuples(st.integers(0, len(text)), st.text(max_size=4)).map(
          lambda p: text[:p[0]] + p[1] + text[p[0]:]),
      st.tuples(st.integers(0, len(text)), st.integers(0, 6)).map(
          lambda p: text[:p[0]] + text[p[0] + p[1]:]))


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_arbitrary_strings_raise_only_parse_error(data):
  base = data.draw(st.sampled_from([PAPER_FORWARD, PAPER_COUNTER, "SELF -\nREQ -"]))
  text = data.draw(_mutations(base))
  try:
    q = parse(text)
  except ParseError:
    return
  assert isinstance(q, Proposal)
  assert parse(serialize(q)) == q


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_fast_path_agrees_with_reference_scanner(data):
  base = serialize(data.draw(_proposals()))
  text = data.draw(st.one_of(st.just(base), _mutations(base)))

  def outcome():
    try:
      return ("ok", _typed(parse(text)))
    except ParseError:
      return ("error",)
  fast = outcome()
  saved = dsl._fast_path
  dsl._fast_path = lambda _: None
  try:
    slow = outcome()
  finally:
    dsl._fast_path = saved
  assert fast == slow
