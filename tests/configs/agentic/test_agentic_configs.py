"""configs/agentic/babyai.py: resolves to its registered experiment, typed args, the blocks map
onto their dataclasses, and the study is sized as the README says."""
import pytest

from configs import common
from configs.agentic import babyai
from experiments import registry
from lib.hostloop.executor_factory import make_executor
from lib.hostloop.executors import InlineExecutor, ProcessExecutor
from lib.rl import agentic, grpo
from lib.serve import policy


def test_config_resolves_and_rejects_unknown_args():
  for arg in ("debug=True", None):
    c = babyai.get_config(arg)
    assert c.experiment in registry.names()
    agentic.AgenticConfig.from_config(c.agentic)
    g = grpo.GRPOConfig.from_config(c.grpo)
    assert g.temperature == 1.0 and c.agentic.old_logp == "sampler"   # token-in/token-out
    assert c.start_fresh is False and set(c.conditions) == {"grpo", "gigpo"}
  with pytest.raises(common.ConfigArgError):
    babyai.get_config("no_such_arg=1")


def test_study_size_and_evaluation_instances():
  c = babyai.get_config(None)
  assert len(c.seeds) == 3 and c.conditions["grpo"] == 0.0 and c.conditions["gigpo"] > 0
  assert len(c.tasks) * c.eval.per_task >= 64   # held-out instances per run
  d = babyai.get_config("debug=True")
  assert d.rl.iterations <= 2 and len(d.seeds) == 1


def test_host_block_picks_the_executor():
  c = babyai.get_config("debug=True")
  assert isinstance(make_executor(c.host), InlineExecutor)
  c.host.executor = "processes"
  ex = make_executor(c.host)
  assert isinstance(ex, ProcessExecutor)
  ex.close()


def test_served_rollout_backend_resolves_its_block():
  c = babyai.get_config("debug=True,rollout_backend=served")
  assert c.rollout_backend == "served"
  s = policy.ServedConfig.from_config(c.served)
  assert s.url == "" and s.resolved_push() == "params"   # Accord's server in process
  c.served.url = "http://127.0.0.1:8000/v1"
  with pytest.raises(ValueError, match="push_dir"):   # an external server needs a push dir
    policy.ServedConfig.from_config(c.served)
  c.served.push = "none"   # e.g. vLLM, which has no weight-update route
  assert policy.ServedConfig.from_config(c.served).resolved_push() == "none"
  assert set(c.served) == set(policy.ServedConfig.field_names())   # every field, none unknown
