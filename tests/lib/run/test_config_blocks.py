"""lib/run/config_blocks.py: one declaration per config block (a `ConfigBlock` dataclass), filled
for config files, read by code, unknown fields refused by name; the trainers' settings use it
too."""
import dataclasses
import subprocess
import sys

import ml_collections
import pytest

from lib.rl import grpo, loop as rl_loop, opsd
from lib.run import config_blocks
from lib.run.config_blocks import ConfigBlock, UnknownFieldError
from lib.sft import loop as sft_loop


def test_block_fills_every_default_and_replaces_the_given_fields():
  host = config_blocks.host_block(executor="processes")
  assert host == {**config_blocks.HostBlock.defaults(), "executor": "processes"}
  assert set(host) == set(config_blocks.HostBlock.field_names())
  plan = config_blocks.plan_block(rows=3)
  assert plan["rows"] == 3 and plan["trainer"] == "sft" and plan["target"] == "cpu"


@pytest.mark.parametrize("build", [
    lambda: config_blocks.model_block(preset_name="x"),
    lambda: config_blocks.plan_block(row=3),
    lambda: config_blocks.host_block(executr="ray"),
    lambda: config_blocks.backend_config("flax", sed=1),
    lambda: grpo.GRPOConfig.from_config({"clip_epsilon": 0.2}),
    lambda: opsd.OPSDConfig.from_config({"alfa": 0.5}),
    lambda: sft_loop.SFTConfig.from_config({"log_evry": 1}),
    lambda: rl_loop.RLLoopConfig.from_config({"ckpt_evry": 1}),
])
def test_every_block_refuses_an_unknown_field_by_name_listing_the_valid_ones(build):
  with pytest.raises(UnknownFieldError) as err:
    build()
  message = str(err.value)
  assert "block has no fields [" in message and "; valid: " in message
  # dict-style callers catch KeyError, the trainers' callers ValueError: both see it
  assert isinstance(err.value, KeyError) and isinstance(err.value, ValueError)


def test_trainer_settings_use_the_one_mechanism():
  for cls, name in ((sft_loop.SFTConfig, "sft"), (grpo.GRPOConfig, "grpo"),
                    (opsd.OPSDConfig, "opsd"), (rl_loop.RLLoopConfig, "rl_loop"),
                    (config_blocks.ModelBlock, "model")):
    assert issubclass(cls, ConfigBlock) and dataclasses.is_dataclass(cls)
    assert cls.block_name == name
    assert cls.from_config(cls.defaults()) == cls()
  cfg = grpo.GRPOConfig.from_config(ml_collections.ConfigDict({"group_size": 4}))
  assert cfg.group_size == 4 and cfg.clip_eps == grpo.GRPOConfig().clip_eps


def test_a_field_reference_stays_linked_to_its_source_field():
  c = ml_collections.ConfigDict()
  c.train = dict(batch=4)
  c.plan = config_blocks.plan_block(rows=c.train.get_ref("batch"))
  c.train.batch = 9       # what `--config.train.batch=9` does
  assert c.plan.rows == 9


def test_model_block_checks_the_remat_policy_and_copies_overrides():
  with pytest.raises(ValueError, match="unknown remat policy 'sometimes'"):
    config_blocks.model_block(remat="sometimes")
  overrides = {"num_layers": 2}
  block = config_blocks.model_block(overrides=overrides)
  block["overrides"]["num_layers"] = 3
  assert overrides == {"num_layers": 2}
  assert config_blocks.model_block(overrides=None)["overrides"] == {}


def test_backend_blocks_complete_a_partial_model_block_and_list_every_kind():
  flax = config_blocks.backend_config("flax", model={"preset": "qwen3-tiny", "dtype": "bfloat16"})
  assert flax["model"] == config_blocks.model_block(dtype="bfloat16")
  assert sorted(config_blocks.BACKEND_DEFAULTS) == ["flax", "openai_http", "scripted", "vllm"]
  with pytest.raises(KeyError, match="unknown backend kind 'tpu'"):
    config_blocks.backend_config("tpu")


def test_the_module_imports_without_jax():
  code = ("import sys; import lib.run.config_blocks; "
          "assert 'jax' not in sys.modules, sorted(m for m in sys.modules if 'jax' in m)")
  subprocess.run([sys.executable, "-c", code], check=True)
