"""The ConPAct re-check study: every arm's study, then their comparison (configs/conpact/study.py
with `arms=True`).

Each run of `config.runs` (C0, R0, R1: arm and pipeline seed) is a whole conpact/study in
<workdir>/<run> (its own data, tokenizer, base planner and actor, and the online Plan-Act,
Assertion and ConPAct-I evaluation), resumable stage by stage; a run started alone with `arm=`
into that directory is picked up where it stopped. Then <workdir>/summary.json / summary.md
(agents/conpact/learned/arms_report.py): per run and env, success of each condition, ConPAct-I
minus Plan-Act and minus Assertion (paired bootstrap 95% CI, exact McNemar, Holm over the two),
repair rate, initial and residual D, per-role correctness.
"""
import os

from agents.conpact.learned import arms_report, study


def run(config, workdir):
  run_dirs = {}
  for name, sub in config.runs.items():
    run_dirs[name] = os.path.join(workdir, name)
    os.makedirs(run_dirs[name], exist_ok=True)
    with open(os.path.join(run_dirs[name], "config.json"), "w", encoding="utf-8") as f:
      f.write(sub.to_json_best_effort(indent=2, sort_keys=True))   # as launch.py writes it
    study.run(sub, run_dirs[name])   # skips every stage a session before finished
  return arms_report.write(config, workdir, run_dirs, debug=bool(config.debug))
