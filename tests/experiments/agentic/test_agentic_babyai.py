"""The agentic BabyAI study end to end on its debug config through launch.py: SFT warm start on
expert rows, GRPO and GiGPO runs with greedy evaluation before / after on the same held-out
instances, strict-JSON summary, curves and TensorBoard, token-in/token-out rollout rows, a
rerun that resumes instead of replaying, and the same config with rollout_backend=served (Accord's
server in process, weights pushed per iteration) training on the server's token ids."""
import json
import os
import shutil

import jax.numpy as jnp
import numpy as np
import pytest

from launch_server import launch_optimised
from configs.agentic import babyai as babyai_config
from lib.hostloop import rollouts
from lib.models import model_setup
from lib.rl import agentic, grpo
from lib.run.config_blocks import model_block
from lib.run.jsonl import read_jsonl
from lib.train.state import nnx_apply_fn

pytestmark = pytest.mark.long_module(260)   # scheduled first: tests/conftest.py


@pytest.fixture(scope="module")
def study(tmp_path_factory):
  work = str(tmp_path_factory.mktemp("agentic"))
  out = launch_optimised("--config=configs/agentic/babyai.py:debug=True", f"--workdir={work}")
  assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
  with open(os.path.join(work, "summary.json"), encoding="utf-8") as f:
    payload = json.load(f, parse_constant=pytest.fail)
  return babyai_config.get_config("debug=True"), work, payload


def test_every_condition_is_evaluated_before_and_after_on_the_same_instances(study):
  c, work, payload = study
  assert payload["debug"] is True
  table = payload["table"]
  assert {(r["condition"], r["seed"]) for r in table} == {
      (cond, s) for cond in c.conditions for s in c.seeds}
  n = c.eval.per_task * len(c.tasks)
  for r in table:
    assert r["instances"] == n and r["iterations"] == c.rl.iterations and r["dropped"] == 0
    assert 0.0 <= r["success_before"] <= 1.0 and 0.0 <= r["success_after"] <= 1.0
    assert r["diff_lo"] <= r["diff"] <= r["diff_hi"]
    assert r["rollout_s"] > 0 and r["update_s"] > 0
  for cond in c.conditions:
    before = read_jsonl(os.path.join(work, "rl", cond, "seed0", "eval", "step0.jsonl"))
    assert sorted(x["instance"] for x in before) == sorted(
        f"{t}/{1000 + o}" for t in c.tasks for o in range(c.eval.per_task))
  for name in ("curves.png", "summary.md", "stages.json"):
    assert os.path.isfile(os.path.join(work, name))
  assert os.listdir(os.path.join(work, "rl", "grpo", "seed0", "tb"))


def test_rollout_rows_carry_the_tokens_of_every_call(study):
  c, work, _ = study
  rows = read_jsonl(os.path.join(work, "rl", "gigpo", "seed0", "rollouts", "it0000.jsonl"))
  assert len(rows) == len(c.tasks) * c.rl.groups_per_task * c.grpo.group_size
  assert sorted({r["group"] for r in rows}) == list(range(len(c.tasks) * c.rl.groups_per_task))
  for r in rows:
    calls = [e for e in r["transcript"] if e["type"] == "call"]
    assert calls and r["calls"] == len(calls)
    for call in calls:
      assert call["prompt_ids"] and 1 <= len(call["token_ids"]) <= c.agentic.turn_tokens
      assert len(call["logprobs"]) == len(call["token_ids"])
  by_group = {}
  for r in rows:   # a group's episodes start from one level
    by_group.setdefault(r["group"], set()).add(r["env_seed"])
  assert all(len(s) == 1 for s in by_group.values())


def test_a_rerun_resumes_every_stage(study):
  _, work, payload = study
  out = launch_optimised("--config=configs/agentic/babyai.py:debug=True", f"--workdir={work}")
  assert out.returncode == 0, out.stderr[-3000:]
  with open(os.path.join(work, "stages.json"), encoding="utf-8") as f:
    stages = json.load(f)
  assert all(s["sessions"] == 1 for name, s in stages.items() if name != "report")
  with open(os.path.join(work, "summary.json"), encoding="utf-8") as f:
    again = json.load(f)
  assert again["table"] == payload["table"]


def test_the_served_backend_trains_on_the_servers_token_ids(study, tmp_path):
  """The debug study's SFT stages reused, one RL iteration per condition with
  rollout_backend=served: the rows carry the server's ids and log-probs, and iteration 0's (the
  SFT weights pushed to the server) are what the update's forward gives those same ids."""
  c, work, _ = study
  served = str(tmp_path / "served")
  os.makedirs(served)
  for name in ("data", "tokenizer", "sft"):
    shutil.copytree(os.path.join(work, name), os.path.join(served, name))
  with open(os.path.join(work, "stages.json"), encoding="utf-8") as f:
    stages = {k: v for k, v in json.load(f).items() if k in ("data", "tokenizer", "sft")}
  for record in stages.values():   # the copied stages' paths point into the copy
    record["result"] = json.loads(json.dumps(record["result"]).replace(work, served))
  with open(os.path.join(served, "stages.json"), "w", encoding="utf-8") as f:
    json.dump(stages, f)
  out = launch_optimised("--config=configs/agentic/babyai.py:debug=True,rollout_backend=served",
                         f"--workdir={served}", "--config.rl.iterations=1")
  assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
  with open(os.path.join(served, "summary.json"), encoding="utf-8") as f:
    table = json.load(f, parse_constant=pytest.fail)["table"]
  assert [r["iterations"] for r in table] == [1] * len(c.conditions)
  assert all(r["dropped"] == 0 and r["update_s"] > 0 for r in table)
  rows = read_jsonl(os.path.join(served, "rl", "gigpo", "seed0", "rollouts", "it0000.jsonl"))
  eps, dropped = rollouts.episodes(rows)
  assert eps and sum(dropped.values()) == 0
  a_cfg = agentic.AgenticConfig.from_config(c.agentic)
  data = agentic.batch(eps, agentic.turn_advantages(eps, a_cfg), 0, a_cfg.turn_tokens)
  p = data["input_ids"].shape[1] - a_cfg.turn_tokens
  calls = [e for r in sorted(rows, key=lambda r: (r["group"], r["member"]))
           for e in r["transcript"] if e["type"] == "call"]
  used = [(i, j) for i, j in zip(data["episode"], data["turn"]) if i >= 0]
  assert len(used) == len(calls)
  for r, ((i, j), call) in enumerate(zip(used, calls)):   # the update's rows: the server's ids
    n, m = len(call["prompt_ids"]), len(call["token_ids"])
    assert data["input_ids"][r, p - n:p].tolist() == call["prompt_ids"]
    assert data["input_ids"][r, p:p + m].tolist() == call["token_ids"]
  export = os.path.join(served, "sft", "export")
  model, _, _ = model_setup.build_model(model_block(**{**dict(c.model), "checkpoint": export}),
                                        seed=0)
  apply_fn, params = nnx_apply_fn(model)
  logp, _ = grpo.response_logprobs(apply_fn, params, jnp.asarray(data["input_ids"]),
                                   jnp.asarray(data["attention_mask"]), a_cfg.turn_tokens)
  mask = data["response_mask"].astype(bool)
  np.testing.assert_allclose(np.asarray(logp)[mask], data["sample_logp"][mask], atol=2e-3)
