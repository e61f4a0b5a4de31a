"""Fuzzed model outputs: the closed loops always return a record with a result, never raise."""
import random
import re

from hypothesis import given, settings, strategies as st

from agents.gencoord import protocol, suites
from agents.gencoord.policies.composer import ProgramPolicy

PROGRAM = ProgramPolicy()
FORWARD = suites.forward("heldout")[::16] + suites.forward("heldout_template")[::20]
FEEDBACK = suites.capability_suite()[::10]
_PIECES = ["q=0", "q=-1", "q=99999", 'item="x y"', "to=agent_a", "to=agent_b", "dst=site_a",
           "bind=ROOF", "station=forest", " > control.wait()", "craft.item(item=chest)", ",",
           ")", "(", "\n", "REQ agent_b ", "q=1.5", "item=stone", "site=marker", "from=quarry"]


_VALUE = re.compile(r"=([^,()]+)")
_VALUES = ["0", "-1", "99999", "agent_a", "agent_b", "agent_c", "site_a", "marker", "ROOF",
           "WORK_BRANCH", "stone", "stick", "chest", "oak_log", '"x"', "true", "1.5", "2", "8",
           "order_chest", "crafting_table", "furnace"]


class Fuzzed:
  name, learned_calls, surface = "fuzzed", 1, "dsl"

  def __init__(self, seed):
    self.rng = random.Random(seed)

  def _edit(self, text):
    for _ in range(self.rng.randint(0, 3)):
      i = self.rng.randint(0, len(text))
      values = list(_VALUE.finditer(text))
      if values and self.rng.random() < 0.6:     # well-formed but wrong field values
        m = self.rng.choice(values)
        text = text[:m.start(1)] + self.rng.choice(_VALUES) + text[m.end(1):]
      elif self.rng.random() < 0.5:
        text = text[:i] + self.rng.choice(_PIECES) + text[i:]
      else:
        text = text[:i] + text[i + self.rng.randint(1, 8):]
    return text

  def generate(self, contexts):
    return [self._edit(t) for t in PROGRAM.generate(contexts)]


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10**9), st.sampled_from(protocol.FORWARD_CONDITIONS),
       st.sampled_from(["multi", "single"]))
def test_forward_loop_never_raises(seed, condition, horizon):
  for rec in protocol.run_forward(FORWARD, Fuzzed(seed), condition, horizon):
    assert rec.result is not None
    assert rec.success or rec.failure_code in protocol.FAIL_CODES


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10**9), st.sampled_from(protocol.FEEDBACK_CONDITIONS))
def test_feedback_loop_never_raises(seed, condition):
  for rec in protocol.run_feedback(FEEDBACK, Fuzzed(seed), condition):
    assert rec.result is not None
    assert rec.success or rec.failure_code in (*protocol.FAIL_CODES, "NO_COMMITMENT")
