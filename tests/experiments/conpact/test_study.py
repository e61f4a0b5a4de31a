"""The ConPAct study end to end in debug size (experiments/conpact/study.py), and the random-model
evaluation's honest metrics."""
import json
import math
import os

import pytest

from launch_server import launch_optimised
from configs.conpact import flax as conpact_flax
from configs.conpact import study as study_config
from experiments import registry


def _strict(path):
  def bad(c):
    raise ValueError(f"non-strict JSON constant {c}")
  with open(path, encoding="utf-8") as f:
    return json.load(f, parse_constant=bad)

pytestmark = pytest.mark.long_module(160)   # scheduled first: tests/conftest.py


@pytest.fixture(scope="module")
def study(tmp_path_factory):
  """The debug study through `launch.py`, in its own process at XLA's default optimisation level
  (tests/launch_server.launch_optimised)."""
  d = str(tmp_path_factory.mktemp("conpact_study"))
  out = launch_optimised("--config=configs/conpact/study.py:debug=True", f"--workdir={d}")
  assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
  c = study_config.get_config("debug=True")
  c.debug = True                               # launch.py records the :debug arg the same way
  return c, d


def test_every_stage_ran_and_the_summary_is_strict_json(study):
  c, d = study
  stages = _strict(os.path.join(d, "stages.json"))
  want = ["data", "tokenizer", "base_planner", "base_actor", "online", "source"] + \
      [f"train/{r['name']}" for r in c.recipes] + [f"eval/{r['name']}" for r in c.recipes]
  assert list(stages) == want and all(s["status"] == "done" for s in stages.values())
  s = _strict(os.path.join(d, "summary.json"))
  assert s["debug"] is True
  conds = {(r["env"], r["condition"]) for r in s["summary"]["online"]["table"]}
  assert {(e, x) for e in c.envs for x in study_config.ONLINE} == conds
  assert os.path.isfile(os.path.join(d, "study.png"))
  md = open(os.path.join(d, "summary.md"), encoding="utf-8").read()
  assert "Table 18 layout" in md and "Table 20 layout" in md and "Paired" in md
  for name in ("planner", "actor", "baseline"):
    assert sum(1 for _ in open(os.path.join(d, "data", f"{name}.jsonl"))) > 0


def test_coverage_and_mismatch_are_reported_honestly(study):
  """Every asserting condition reports per-role coverage in [0, 1]; D is a number exactly where some
  check was comparable and null otherwise (one role, or nothing comparable: null, never 0).

  The debug models (40 SFT steps) are too raw to be required to assert; the full run in the
  README (10 / 3 epochs per role) shows BabyAI coverage >= 99%, and an untrained model's coverage
  0 / D null is tested below."""
  _, d = study
  table = _strict(os.path.join(d, "summary.json"))["summary"]["online"]["table"]
  asserting = [r for r in table if r["condition"] not in ("react", "self_refine", "resample",
                                                          "plan_act")]
  assert asserting
  for r in asserting:
    for role in ("coverage_planner", "coverage_actor"):
      assert r[role] is None or 0.0 <= r[role] <= 1.0
  for r in table:
    if r["condition"] in ("react", "self_refine", "resample") or not r["comparable_checks"]:
      assert r["D_step"] is None
    else:
      assert 0.0 <= r["D_step"] <= 1.0


def test_paired_differences_and_trained_tables(study):
  c, d = study
  s = _strict(os.path.join(d, "summary.json"))["summary"]
  vs = {(p["model"], p["against"]) for p in s["online"]["paired"]}
  assert ("conpact_i", "plan_act") in vs and ("conpact_i", "assertion") in vs
  assert {(t["env"], t["condition"]) for t in s["trained"]} == \
      {(e, x) for e in c.envs for x in c.trained_conditions}
  models = {r["model"] for r in s["trained"][0]["table20"]}
  assert models == {r["name"] for r in c.recipes}


def test_rerun_skips_every_stage(study):
  c, d = study
  before = os.path.getmtime(os.path.join(d, "base", "actor", "export", "config.json"))
  registry.get("conpact/study")(c, d)
  assert os.path.getmtime(os.path.join(d, "base", "actor", "export", "config.json")) == before
  assert _strict(os.path.join(d, "summary.json"))["debug"] is True


def test_random_model_reports_null_d_and_zero_coverage(tmp_path):
  """An untrained model never writes a parseable <state> block: coverage 0, D null (not 0)."""
  c = conpact_flax.get_config("debug=True,budget=2,max_tokens=8")
  c.instances, c.rollouts = 1, 1
  c.conditions = [x for x in c.conditions if x["name"] == "assertion"]
  registry.get("conpact/eval")(c, str(tmp_path))
  row = _strict(os.path.join(tmp_path, "summary.json"))["summary"]["table"][0]
  assert row["coverage_planner"] == 0 and row["coverage_actor"] == 0
  assert row["D_step"] is None and row["comparable_checks"] == 0
  assert not (isinstance(row["success"], float) and math.isnan(row["success"]))
