"""The three ConPAct demonstration configs build, validate and carry their labels."""
import pytest

from agents.conpact import methods, textenv
from configs import common
from configs.conpact import flax as conpact_flax
from configs.conpact import openai as conpact_openai
from configs.conpact import scripted as conpact_scripted
from experiments import registry


def test_scripted_config_has_table18_switches_and_valid_methods():
  c = conpact_scripted.get_config()
  assert registry.EXPERIMENTS[c.experiment] == "experiments.conpact.eval"
  switches = [tuple(x["settings"][k] for k in ("correction_trigger", "conflict_feedback",
                                               "planner_participation"))
              for x in c.conditions if x["method"] == "conpact_i"]
  assert switches == [(False, False, False), (True, False, True), (True, True, False),
                      (True, True, True)]
  task = textenv.task("sokoban")
  for x in c.conditions:  # every condition builds an agent (unknown settings would raise)
    methods.make_agent(x["method"], task, **x["settings"])
  assert c.backend.kind == "scripted" and c.rollouts == 8


def test_openai_config_routes_roles_and_keeps_key_out():
  c = conpact_openai.get_config("base_url=http://10.0.0.5:9000/v1,model=big,actor_model=small,"
                                "api_key_env=MY_KEY,envs=sokoban+minigrid")
  assert c.envs == ["sokoban", "minigrid"]
  assert (c.backend.base_url, c.backend.model, c.backend.api_key_env) == \
      ("http://10.0.0.5:9000/v1", "big", "MY_KEY")
  assert (c.actor_backend.base_url, c.actor_backend.model) == ("http://10.0.0.5:9000/v1", "small")
  assert all(x["settings"]["temperature"] == 0.7 for x in c.conditions)
  assert not conpact_openai.get_config().actor_backend  # one model for both roles by default
  with pytest.raises(common.ConfigArgError):
    conpact_openai.get_config("modle=x")


def test_flax_config_is_labelled_random_by_default():
  assert "RANDOM" in conpact_flax.get_config().label
  assert "RANDOM" not in conpact_flax.get_config("checkpoint=some/dir").label


def test_train_config_maps_ablation_args():
  from configs.conpact import train as conpact_train  # pylint: disable=import-outside-toplevel
  c = conpact_train.get_config("debug=True,source=runs/x,sup=False")
  assert registry.EXPERIMENTS[c.experiment] == "experiments.conpact.train"
  assert (c.curate.reconciliation_supervision, c.curate.reconciliation_replay,
          c.curate.consistency_filtering) == (False, True, True)
  assert c.seed == 42 and c.reference_epochs == 3
  with pytest.raises(common.ConfigArgError):
    conpact_train.get_config("epochs=3")
