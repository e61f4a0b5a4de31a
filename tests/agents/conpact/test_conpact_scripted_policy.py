"""The scripted policy (mechanics only): noise-free perception reproduces the env's ground truth, so
injected perception noise is the only source of wrong assertions; replies replay deterministically;
the role router keeps order."""
from agents.conpact import schemas, scripted, textenv
from agents.conpact.routing import RoleRouter
from lib.backends.protocol import SamplingParams
from lib.backends.scripted import FunctionPolicy, NoiseModel, ScriptedBackend


def _canon(env, facts):
  sch = schemas.get(env)
  return {f.name: schemas.canonical(f, facts[f.name]) for f in sch.fields}


def test_clean_perception_equals_ground_truth_sokoban_and_minigrid():
  cases = [("sokoban", textenv.sokoban_instances(n=4)),
           ("minigrid", textenv.minigrid_instances(("BabyAI-GoToLocal-v0",), per_task=2))]
  for env, insts in cases:
    percept = scripted.PERCEPTION[env]()
    sch = schemas.get(env)
    for inst in insts:
      e = inst.make_env()
      obs, info = e.reset(inst.env_seed)
      for step in range(3):
        truth = sch.truth(info["state_facts"])
        got = _canon(env, percept.facts(percept.clean(obs)))
        assert got == truth, (env, inst.instance_id, step)
        obs, _, _, _, info = e.step(step % 2)


def test_noise_rate_controls_wrong_readings_and_replay_is_exact():
  inst = textenv.sokoban_instances(n=1)[0]
  obs, info = inst.make_env().reset(inst.env_seed)
  truth = schemas.get("sokoban").truth(info["state_facts"])
  msgs = [{"role": "system", "content": "ROLE: actor\n<state>"},
          {"role": "user", "content": f"Observation 1 of 1 (current):\n{obs}\n\nYour reply:"}]
  for rate in (0.0, 0.5):
    policy = scripted.ConPActScriptedPolicy("sokoban", NoiseModel({"perception": rate,
                                                                    "recheck_miss": 0.0}), 0.0)
    backend = ScriptedBackend(policy, seed=3)
    wrong = 0
    for s in range(200):
      p = SamplingParams(seed=s)
      said = policy.intended(msgs, backend.request_rng(msgs, p))
      wrong += _canon("sokoban", said) != truth
      if s < 5:  # replaying the logged conversation + seed reproduces the reply exactly
        assert backend.generate([msgs], p)[0].text == policy.respond(msgs, backend.request_rng(msgs, p))
    if rate == 0.0:
      assert wrong == 0
    else:
      assert 0.4 < wrong / 200 < 0.6  # binomial(200, 0.5): outside is a > 4-sigma event


def test_role_router_splits_and_keeps_order():
  seen = {"planner": [], "actor": []}
  def backend(role):
    return ScriptedBackend(FunctionPolicy(lambda m, r: seen[role].append(m[1]["content"]) or
                                          f"{role}:{m[1]['content']}"))
  router = RoleRouter({"planner": backend("planner"), "actor": backend("actor")})
  convs = [[{"role": "system", "content": f"ROLE: {r}\nx"}, {"role": "user", "content": str(i)}]
           for i, r in enumerate(["actor", "planner", "actor", "planner"])]
  out = router.generate(convs)
  assert [c.text for c in out] == ["actor:0", "planner:1", "actor:2", "planner:3"]
  assert seen == {"planner": ["1", "3"], "actor": ["0", "2"]}
  assert router.usage.snapshot()["calls"] == 4
