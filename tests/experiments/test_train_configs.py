"""The training configs resolve, name registered experiments, and reject unknown args."""
import importlib

import pytest

from configs import common
from experiments import registry
from lib.rl import grpo, opsd

CONFIGS = ("sft_toy", "grpo_toy", "opsd_toy", "bench.train")


@pytest.mark.parametrize("name", CONFIGS)
def test_config_resolves_to_registered_experiment(name):
  module = importlib.import_module(f"configs.{name}")
  for arg in ("debug=True", None):
    c = module.get_config(arg)
    assert c.experiment in registry.names()
  with pytest.raises(common.ConfigArgError):
    module.get_config("no_such_arg=1")


def test_trainer_blocks_map_onto_dataclasses():
  g = importlib.import_module("configs.grpo_toy").get_config("debug=True")
  cfg = grpo.GRPOConfig.from_config(g.grpo)
  assert (cfg.clip_eps, cfg.dual_clip_c, cfg.kl_coef, cfg.entropy_coef) == (0.2, 3.0, 0.01, 0.001)
  o = importlib.import_module("configs.opsd_toy").get_config("debug=True")
  ocfg = opsd.OPSDConfig.from_config(o.opsd)
  assert (ocfg.alpha, ocfg.is_clip) == (0.5, 2.0)
  with pytest.raises(ValueError, match=r"grpo block has no fields \['clip_epsilon'\]"):
    grpo.GRPOConfig.from_config({"clip_epsilon": 0.2})


@pytest.mark.parametrize("name", ("grpo_toy", "opsd_toy", "wm.train"))
def test_trainer_configs_have_the_start_fresh_switch_off(name):
  c = importlib.import_module(f"configs.{name}").get_config("debug=True")
  assert c.start_fresh is False   # lib.train.setup.fresh_start; --config.start_fresh=True
