"""The audit's scripted stand-in model answers the real prompts in the formats the parsers read."""
import numpy as np

from agents.wm import prompts
from agents.wm.scripted import ScriptedAuditModel


def _ask(model, prompt, seed=0):
  return model.respond([{"role": "user", "content": prompt}], np.random.default_rng(seed))


def test_list_regime_picks_a_listed_action_and_no_list_a_generic_one():
  listed = ["open fridge", "take egg from fridge", "go to sinkbasin 1"]
  model = ScriptedAuditModel(p_garble=0.0)
  for seed in range(20):
    prompt = prompts.agent_prompt("alfworld", "put an egg in the sink", [], "You see a fridge.",
                                  0, admissible=listed)
    assert prompts.parse_action(_ask(model, prompt, seed)) in listed
    no_list = prompts.agent_prompt("scienceworld", "boil water", [], "A kitchen.", 0)
    assert prompts.parse_action(_ask(model, no_list, seed)) is not None


def test_garbled_replies_have_no_action_and_predictions_echo_the_observation():
  prompt = prompts.agent_prompt("textworld", "win", [], "A room.", 0, admissible=["look"])
  assert prompts.parse_action(_ask(ScriptedAuditModel(p_garble=1.0), prompt)) is None
  wm = prompts.world_model_prompt("textworld", "win", [], "A dark room.\nExits: north.", "look")
  reply = _ask(ScriptedAuditModel(), wm)
  assert reply.endswith("<next_state>A dark room.\nExits: north.</next_state>")
