"""The sender probe's sequences: the answer is the sender's obtain quantity of the real templates."""
import json
import re

from agents.gencoord import facts, suites, templates
from agents.gencoord.learned import sender_probe

_PROMPT = re.compile(r"template=(\w+) goal_count=(\d) inventory=(\{.*\})$")


def _obtain(name: str, k: int) -> tuple[str, int]:
  """(item, smallest quantity over the bindings) of the sender path's obtain step at goal count
  k: the need a holding stays below in the real worlds (facts.py)."""
  tmpl = templates.get(name)
  steps = [next(t for t in tmpl.branch(b, "a", "b", k).sender_path
                if t.skill == "resource.obtain") for b in tmpl.bindings]
  assert len({s.args["item"] for s in steps}) == 1
  return steps[0].args["item"], min(s.args["q"] for s in steps)


def test_the_target_is_need_minus_holding_of_the_path_item():
  pairs = sender_probe.sequences(400, 3)
  held_some = distractors = 0
  for prompt, target in pairs:
    name, k, inv = _PROMPT.match(prompt).groups()
    inv = json.loads(inv)
    item, need = _obtain(name, int(k))
    assert name in suites.CORE and list(inv) == sorted(inv)
    assert target == f"q={need - inv.get(item, 0)}" and need - inv.get(item, 0) >= 1
    others = set(inv) - {item}
    assert not others & facts.touched(name) and all(1 <= inv[o] <= 16 for o in others)
    held_some += item in inv
    distractors += bool(others)
  assert held_some > 300 and distractors > 200         # holdings and distractors both vary
  assert {p[0].split()[0] for p in pairs} == {f"template={n}" for n in suites.CORE}


def test_sequences_are_distinct_deterministic_and_keep_out_the_excluded():
  train = sender_probe.sequences(300, 0)
  assert train == sender_probe.sequences(300, 0) and len({p for p, _ in train}) == 300
  test = sender_probe.sequences(200, 1, exclude=frozenset(p for p, _ in train))
  assert not {p for p, _ in test} & {p for p, _ in train}
