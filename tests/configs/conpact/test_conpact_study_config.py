"""configs/conpact/study.py: the study's fixed choices and its debug shrink."""
import numpy as np
import pytest

from agents.conpact import demonstration_spec, demonstrations
from configs import common
from configs.conpact import study


def test_study_config_fixes_noise_separates_roles_and_orders_recipes():
  c, d = study.get_config(), study.get_config("debug=True")
  assert c.data.noise == d.data.noise == study.NOISE       # not an evaluation-split knob
  assert c.data.planner_seed != c.data.actor_seed
  assert c.base.planner_seed != c.base.actor_seed
  names = [x["name"] for x in c.online.conditions]
  assert names == [n for n in names if n in study.ONLINE] and set(names) == set(study.ONLINE)
  assert [r["recipe"] for r in c.recipes][-1] == "baseline"   # matched to ConPAct-R, so last
  assert {r["recipe"] for r in c.recipes} == {"conpact_s", "conpact_r", "baseline"}
  assert c.online.split == "evaluation"
  for small, big in ((d.base.train.steps, c.base.train.steps), (d.online.instances,
                                                                  c.online.instances),
                     (d.data.sokoban, c.data.sokoban)):
    assert small < big
  assert study.get_config("checkpoint=/x").model.checkpoint == "/x"


def test_evaluated_tasks_are_those_whose_median_expert_solution_fits_the_cap():
  """EXPERT_ACTIONS is a measurement on the source split (the BabyAI bot), not a choice: recompute
  the medians, and check that exactly the tasks above the cap leave the evaluation."""
  for task in demonstration_spec.BABYAI_TASKS:
    med = np.median([len(demonstrations.expert_episode(task, i)[2]) for i in range(20)])
    assert (task in study.EXPERT_ACTIONS) == (med > 24), (task, med)
    if task in study.EXPERT_ACTIONS:
      assert abs(study.EXPERT_ACTIONS[task] - med) <= 0.5, (task, med)
  c = study.get_config()
  assert set(c.eval_minigrid_tasks) == set(c.minigrid_tasks) - set(study.EXPERT_ACTIONS)
  assert c.online.minigrid_tasks == c.eval_minigrid_tasks
  assert set(study.get_config("budget=0").eval_minigrid_tasks) == set(c.minigrid_tasks)


def test_arm_c_is_the_measured_recipe_and_arm_r_the_targeted_recheck():
  default, c, r = study.get_config(), study.get_config("arm=C"), study.get_config("arm=R")
  assert default.data.to_dict() == c.data.to_dict() and c.data.discussion == "redraw"
  assert r.data.discussion == "recheck" and r.data.recheck == study.RECHECK == 0.05
  assert {k: v for k, v in r.data.items() if k != "discussion"} == \
      {k: v for k, v in c.data.items() if k != "discussion"}
  assert [x["name"] for x in c.online.conditions] == list(study.ONLINE) and c.recipes


def test_arms_evaluates_three_conditions_on_64_babyai_instances_without_recipes():
  c = study.get_config("arms=True,arm=R")
  assert [x["name"] for x in c.online.conditions] == list(study.ARM_CONDITIONS)
  assert c.online.minigrid_per_task == 16 and len(c.online.minigrid_tasks) == 4
  assert c.online.rollouts == 2 and c.recipes == []
  assert study.get_config("arms=True,arm=R,debug=True").online.minigrid_per_task == 1
  whole = study.get_config("arms=True")
  assert [(n, r.arm, r.pipeline) for n, r in whole.runs.items()] == list(study.ARM_RUNS)
  assert all(r.online.minigrid_per_task == 16 for r in whole.runs.values())


def test_pipeline_seed_moves_every_noise_stream_and_model_seed():
  a, b = study.get_config(), study.get_config("pipeline=1")
  for block in ("data", "base"):
    assert all(a[block][k] != b[block][k] for k in ("planner_seed", "actor_seed"))
  assert len({b.data.planner_seed, b.data.actor_seed, a.data.planner_seed,
              a.data.actor_seed}) == 4


def test_an_unknown_arm_is_one_line():
  with pytest.raises(common.ConfigArgError, match="unknown arm 'X'; valid: C, R"):
    study.get_config("arm=X")
