"""ConPAct: planner-actor state assertions, contradiction detection, reconciliation, curated SFT data.

  schemas.py     per-env assertion fields (built on each env's `state_facts`) and their ground truth
  parse.py       tolerant extraction of assertion JSON, actions and sub-goals from model replies
  compare.py     the programmatic comparator: explicit contradictions, correctness vs ground truth
  prompts.py     system/user prompts for every role (our own wording)
  textenv.py     Task and instance lists (budgets) over the text envs of envs/ (Sokoban, MiniGrid,
                 Crafter, the six Procgen games)
  base.py        generator-based agents on the lib.hostloop.agent protocol, observation windows
  react.py       ReAct (+ assertion prompting), plan_act.py Plan-Act, self_refine.py, resample.py
  conpact_i.py   ConPAct-I: comparator-triggered discussion with the Table 18 ablation switches
  methods.py     method name -> agent (react, self_refine, resample, plan_act, assertion, conpact_i)
  routing.py     RoleRouter: planner and actor served by different backends
  scripted.py    scripted planner/actor with a seeded perception-noise model (mechanics only)
  scripted_games.py  its perception of Procgen and Crafter frames
  labels.py      independent contradiction labels (policy replay) for comparator precision/recall
  metrics.py     mismatch D over comparable checks, assertion coverage, correctness, avg/pass@k,
                 pass^k, cost metrics, cluster-bootstrap CIs (None, never NaN, without inputs)
  attribution.py failure attribution (Fig. 1b), sub-goal adherence (Fig. 2b), CC/CW (Table 23)
  figure.py      the demo figure: success with CIs, initial vs residual D per condition
  curate.py      ConPAct-S/R SFT rows from logged trajectories (the consistency rule, Table 20
                 switches, target-token budgets); recipes.py the S/R target rules (Table 8);
                 optimality.py the non-optimal-action judge ConPAct-R uses
  evaluate.py    every condition x env x instance x rollout through the host loop, the report
                 (the conpact/eval stage, run by experiments/conpact/eval.py and study.py)
  study_tables.py  Tables 20-22 analogues for trained models, with paired tests
  learned/       models trained here: rows, role SFT, recipe training (conpact/train), report
"""
