"""configs/conpact/study.py: the study's fixed choices and its debug shrink."""
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
