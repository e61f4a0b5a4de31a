"""The re-check study from one command (experiments/conpact/arms.py, `arms=True`) in debug size:
every arm's study runs into its own directory, the comparison reads their online evaluations, a
rerun skips everything; and the Holm family is the two comparisons of one run and env."""
import json
import os

import pytest

from agents.conpact.learned import arms_report
from configs.conpact import probe as probe_config
from configs.conpact import study as study_config
from experiments import registry
from launch_server import launch_optimised

pytestmark = pytest.mark.long_module(150)   # scheduled first: tests/conftest.py


def _strict(path):
  def bad(c):
    raise ValueError(f"non-strict JSON constant {c}")
  with open(path, encoding="utf-8") as f:
    return json.load(f, parse_constant=bad)


@pytest.fixture(scope="module")
def arms(tmp_path_factory):
  d = str(tmp_path_factory.mktemp("conpact_arms"))
  out = launch_optimised("--config=configs/conpact/study.py:arms=True,debug=True",
                         f"--workdir={d}")
  assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
  c = study_config.get_config("arms=True,debug=True")
  c.debug = True
  return c, d


def test_every_arm_runs_its_own_study_and_the_comparison_is_strict_json(arms):
  c, d = arms
  assert list(c.runs) == ["C0", "R0"]
  for name in c.runs:
    stages = _strict(os.path.join(d, name, "stages.json"))
    assert list(stages) == ["data", "tokenizer", "base_planner", "base_actor", "online"]
    assert all(s["status"] == "done" for s in stages.values())
  # the two arms' demonstrations differ only in their discussion rows
  rows = {n: open(os.path.join(d, n, "data", "planner.jsonl"), encoding="utf-8").read()
          for n in c.runs}
  assert rows["C0"] != rows["R0"]
  s = _strict(os.path.join(d, "summary.json"))
  assert s["debug"] is True
  got = {(r["run"], r["env"], r["arm"], r["discussion"]) for r in s["summary"]["rows"]}
  assert got == {(n, e, c.runs[n].arm, c.runs[n].data.discussion) for n in c.runs
                 for e in c.runs[n].envs}
  for r in s["summary"]["rows"]:
    assert r["episodes"] == (c.runs[r["run"]].online.minigrid_per_task if r["env"] == "minigrid"
                             else c.runs[r["run"]].online.instances) * 2
    for ref in c.comparisons:
      assert r[f"minus_{ref}_p_holm"] >= r[f"minus_{ref}_p"]
  assert os.path.isfile(os.path.join(d, "arms.png"))
  md = open(os.path.join(d, "summary.md"), encoding="utf-8").read()
  assert "ConPAct-I − plan_act" in md and "(debug run)" in md


def test_rerun_skips_every_stage_of_every_arm(arms):
  c, d = arms
  export = os.path.join(d, "R0", "base", "actor", "export", "config.json")
  before = os.path.getmtime(export)
  registry.get("conpact/arms")(c, d)
  assert os.path.getmtime(export) == before


def _online(path, paired):
  os.makedirs(os.path.join(path, "online"))
  table = [{"env": "minigrid", "condition": x, "success": 0.5, "success_ci": [0.25, 0.75],
            "episodes": 8} for x in ("plan_act", "assertion", "conpact_i")]
  with open(os.path.join(path, "online", "summary.json"), "w", encoding="utf-8") as f:
    json.dump({"summary": {"table": table, "paired": paired}}, f)


def test_holm_adjusts_the_two_comparisons_of_one_run_and_env(tmp_path):
  c = study_config.get_config("arms=True")
  paired = [{"env": "minigrid", "model": "conpact_i", "against": "plan_act", "diff_pp": 25.0,
             "ci95_pp": [5.0, 45.0], "p_mcnemar": 0.01},
            {"env": "minigrid", "model": "conpact_i", "against": "assertion", "diff_pp": 12.5,
             "ci95_pp": [-5.0, 30.0], "p_mcnemar": 0.04},
            {"env": "minigrid", "model": "assertion", "against": "plan_act", "diff_pp": 12.5,
             "ci95_pp": [-5.0, 30.0], "p_mcnemar": 0.001}]   # not in the family
  _online(str(tmp_path / "R0"), paired)
  s = arms_report.write(c, str(tmp_path), {"R0": str(tmp_path / "R0")})
  (row,) = s["rows"]
  assert (row["minus_plan_act_p_holm"], row["minus_assertion_p_holm"]) == pytest.approx(
      (0.02, 0.04))
  assert row["minus_plan_act_pp"] == 25.0 and row["conpact_i_success"] == 50.0
  assert row["repair_rate"] is None     # no input: null, not 0


def test_a_run_started_alone_is_the_same_study_as_inside_the_whole():
  whole = study_config.get_config("arms=True")
  for name, arm, pipeline in study_config.ARM_RUNS:
    alone = study_config.get_config(f"arms=True,arm={arm},pipeline={pipeline}")
    assert alone.to_dict() == whole.runs[name].to_dict()
  assert whole.runs.R1.data.planner_seed != whole.runs.R0.data.planner_seed


def test_field_probe_reads_an_arm_run(arms, tmp_path):
  """configs/conpact/probe.py on one arm's study: every role x row set x schema field."""
  _, d = arms
  c = probe_config.get_config(f"study={os.path.join(d, 'R0')},debug=True")
  registry.get("conpact/probe")(c, str(tmp_path))
  table = _strict(os.path.join(tmp_path, "summary.json"))["table"]
  assert {(t["role"], t["rows_from"], t["env"]) for t in table} == {
      (role, s, e) for role in ("planner", "actor") for s in ("train", "held_out")
      for e in ("sokoban", "minigrid")}
  assert all(0.0 <= t["correct"] <= t["stated"] <= 1.0 for t in table)


def test_probe_of_a_directory_that_is_no_study_is_one_line(tmp_path):
  c = probe_config.get_config(f"study={tmp_path},debug=True")
  with pytest.raises(FileNotFoundError, match="is not a conpact/study run directory"):
    registry.get("conpact/probe")(c, str(tmp_path / "out"))
