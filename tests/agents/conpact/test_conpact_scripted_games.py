"""ConPAct on Procgen and Crafter (SCRIPTED policy, mechanics only): per-game schemas read the
envs' real states, scripted perception reproduces the ground truth when noise-free, a misreading
flips exactly the fact the comparator then flags, and a debug run over Procgen + Crafter reports D
over comparable checks."""
import json
import os

import numpy as np
import pytest

from agents.conpact import compare, parse, schemas, scripted, textenv
from configs.conpact import scripted as conpact_scripted
from experiments.conpact import eval as conpact_eval
from lib.backends.protocol import SamplingParams
from lib.backends.scripted import NoiseModel, ScriptedBackend

PROCGEN = [f"procgen-{g}" for g in conpact_scripted.PROCGEN_GAMES]


def _instances(env, n=1):
  return textenv.crafter_instances(n=n) if env == "crafter" else textenv.procgen_instances(env, n=n)


def _canon(env, facts):
  return {f.name: schemas.canonical(f, facts[f.name]) for f in schemas.get(env).fields}


def test_procgen_schemas_follow_paper_table3():
  for env in PROCGEN:
    names = schemas.get(env).names
    assert names == (("target_visible",) if env == "procgen-maze"
                     else ("target_visible", "hazard_nearby"))
  assert "cheese" in schemas.get("procgen-maze").describe()
  assert "smaller fish" in schemas.get("procgen-bigfish").describe()


@pytest.mark.parametrize("env", PROCGEN + ["crafter"])
def test_clean_perception_equals_ground_truth_along_an_episode(env):
  percept = scripted.PERCEPTION[env]()
  sch = schemas.get(env)
  inst = _instances(env)[0]
  e = inst.make_env()
  obs, info = e.reset(inst.env_seed)
  rng = np.random.default_rng(0)
  seen = set()
  for step in range(25):
    truth = sch.truth(info["state_facts"])
    seen.add(tuple(sorted(truth.items(), key=str)))
    board = percept.clean(obs)
    assert _canon(env, percept.facts(board)) == truth, (env, step, obs)
    obs, _, terminated, truncated, info = e.step(percept.act(board, rng, ""))
    if terminated or truncated:
      break
  assert "success" in info  # SuccessWhen: level completed / wood pickaxe made


@pytest.mark.parametrize("env", ["procgen-miner", "procgen-maze", "crafter"])
def test_misreading_changes_one_fact_and_the_comparator_flags_it(env):
  percept = scripted.PERCEPTION[env]()
  sch = schemas.get(env)
  inst = _instances(env)[0]
  obs, _ = inst.make_env().reset(inst.env_seed)
  clean = percept.clean(obs)
  rng = np.random.default_rng(1)
  for _ in range(20):
    true_facts, wrong = percept.facts(clean), percept.facts(percept.misread(clean, rng))
    differ = [k for k in sch.names if _canon(env, true_facts)[k] != _canon(env, wrong)[k]]
    assert len(differ) == 1
    # rendered as a model would (JSON, "yes"/"no", Python literal) and parsed back
    p = parse.parse_assertion("<state>" + scripted.render_state(true_facts, sch.names, rng)
                              + "</state>", sch).values
    a = parse.parse_assertion("<state>" + scripted.render_state(wrong, sch.names, rng)
                              + "</state>", sch).values
    flagged = {c.field for c in compare.contradictions(p, a, sch)}
    assert flagged <= set(differ)
    if p.get(differ[0]) is not None and a.get(differ[0]) is not None:
      assert flagged == set(differ)


def test_verified_facts_replace_a_misreading():
  env = "crafter"
  policy = scripted.ConPActScriptedPolicy(env, NoiseModel({"perception": 1.0, "recheck_miss": 0.0}), 0.0)
  inst = _instances(env)[0]
  obs, info = inst.make_env().reset(inst.env_seed)
  truth = schemas.get(env).truth(info["state_facts"])
  verified = json.dumps({k: schemas.to_json(v) for k, v in truth.items()})
  base = {"role": "user", "content": f"Observation 1 of 1 (current):\n{obs}\n\nYour reply:"}
  sys = {"role": "system", "content": "ROLE: actor\n<state>"}
  injected = {"role": "user", "content": base["content"] + "\n\nVerified state (reliable, from the "
              f"environment):\n{verified}"}
  backend = ScriptedBackend(policy, seed=0)
  for s in range(10):
    msgs = [sys, base]
    said = policy.intended(msgs, backend.request_rng(msgs, SamplingParams(seed=s)))
    assert _canon(env, said) != truth  # noise always fires
    msgs = [sys, injected]
    said = policy.intended(msgs, backend.request_rng(msgs, SamplingParams(seed=s)))
    assert _canon(env, said) == truth


def test_unknown_envs_are_rejected():
  with pytest.raises(ValueError, match="unknown ConPAct env 'atari'"):
    conpact_scripted.get_config("envs=sokoban+atari")
  with pytest.raises(KeyError, match="unknown Procgen game"):
    textenv.task("procgen-starpilot")
  assert conpact_scripted.get_config().envs == ["sokoban", "minigrid"]  # the README's default
  c = conpact_scripted.get_config("envs=procgen+crafter")
  assert c.envs == PROCGEN + ["crafter"] and c.budget_cap == 0


def test_success_when_sets_the_success_flag():
  class Fake:
    def reset(self, seed):
      return "o", {"level_complete": False}

    def step(self, action):
      return "o", 10.0, True, False, {"level_complete": action == "right"}

  env = textenv.SuccessWhen(Fake(), lambda info: info["level_complete"])
  assert env.reset(0)[1]["success"] is False
  assert env.step("right")[4]["success"] is True and env.step("left")[4]["success"] is False


def test_debug_run_over_procgen_and_crafter_reports_d_over_comparable_checks(tmp_path):
  c = conpact_scripted.get_config("debug=True,envs=procgen+crafter")
  assert c.budget_cap > 0 and c.envs == PROCGEN + ["crafter"]
  c.instances = 1
  c.conditions = [x for x in c.conditions if x["name"] in ("react", "assertion", "conpact_i")]
  conpact_eval.run(c, str(tmp_path))
  with open(os.path.join(tmp_path, "summary.json")) as f:
    s = json.loads(f.read(), parse_constant=lambda x: pytest.fail(f"{x} in summary.json"))["summary"]
  rows = {(r["env"], r["condition"]): r for r in s["table"]}
  assert {e for e, _ in rows} == set(PROCGEN + ["crafter"])
  for env in PROCGEN + ["crafter"]:
    assert rows[env, "react"]["D_step"] is None  # one role: nothing comparable, D null
    for cond in ("assertion", "conpact_i"):
      r = rows[env, cond]
      assert r["coverage_actor"] == 1.0 and r["comparable_checks"] > 0
      assert r["D_step"] is not None and 0.0 <= r["D_step"] <= 1.0
  assert sum(rows[e, "assertion"]["D_step"] > 0 for e in PROCGEN + ["crafter"]) >= 4
  for comp in s["comparator"]:  # the comparator finds exactly the labelled contradictions
    assert comp["fp"] == 0 and comp["fn"] == 0
