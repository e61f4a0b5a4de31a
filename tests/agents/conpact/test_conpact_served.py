"""Demo 3's config against the repo's OpenAI-compatible server on loopback (SCRIPTED policy behind
the server, so the run is fast and its outcome is known): served rows equal direct rows, the role
router splits planner/actor traffic, and the API key never reaches any output file."""
import json
import os

from agents.conpact import scripted
from configs.conpact import openai as conpact_openai
from configs.conpact import scripted as conpact_scripted
from experiments.conpact import eval as conpact_eval
from lib.backends.scripted import NoiseModel, ScriptedBackend
from lib.serve import OpenAIServer

KEY = "sk-conpact-test-DO-NOT-LOG-4411"
NOISE = {"perception": 0.4, "recheck_miss": 0.1}
KEEP = ("assertion", "conpact_i")


def _rows(d):
  with open(os.path.join(d, "results.jsonl")) as f:
    rows = [json.loads(l) for l in f]
  return {(r["condition"], r["instance"], r["rollout"]):
          [e.get("text") for e in r["transcript"] if e["type"] == "call"] for r in rows}


def test_served_run_matches_direct_scripted_run(tmp_path, monkeypatch):
  policy = scripted.ConPActScriptedPolicy("sokoban", NoiseModel(NOISE), abstain=0.1)
  server = OpenAIServer(ScriptedBackend(policy, seed=0), "accord", port=0).start()
  try:
    monkeypatch.setenv("CONPACT_TEST_KEY", KEY)
    served = conpact_openai.get_config(
        f"debug=True,base_url={server.url},actor_base_url={server.url},api_key_env=CONPACT_TEST_KEY,"
        "temperature=0.0")
    served.conditions = [x for x in served.conditions if x["name"] in KEEP]
    conpact_eval.run(served, str(tmp_path / "served"))
  finally:
    server.shutdown()
  direct = conpact_scripted.get_config("debug=True")
  direct.envs, direct.instances, direct.rollouts = ["sokoban"], 2, 2
  direct.budget_cap = served.budget_cap
  direct.scripted.noise = NOISE
  direct.conditions = [{**x, "settings": {**x["settings"], "actor_max_tokens": 512,
                                          "planner_max_tokens": 512}}
                       for x in direct.conditions if x["name"] in KEEP]
  conpact_eval.run(direct, str(tmp_path / "direct"))
  a, b = _rows(str(tmp_path / "served")), _rows(str(tmp_path / "direct"))
  assert a == b and len(a) == 8 and all(len(v) >= 3 for v in a.values())
  summary = json.load(open(tmp_path / "served" / "summary.json"))["summary"]
  assert summary["label"] == "planner accord, actor accord"
  assert all(r["backend_errors"] == 0 for r in summary["table"])
  for root, _, files in os.walk(tmp_path / "served"):
    for name in files:
      with open(os.path.join(root, name), "rb") as f:
        assert KEY.encode() not in f.read(), name
