"""Field probe of a ConPAct study's base roles (configs/conpact/probe.py): per role, row set
(train / held_out) and env schema, the share of fields stated, stated as demonstrated, and stated
correctly; summary.json / summary.md."""
import copy
import json
import os

from agents.conpact import demonstrations
from agents.conpact.learned import field_probe
from envs import splits
from lib.backends import factory
from lib.run.jsonl import read_jsonl
from lib.run.results import write_summary

ROLES_ROWS = {"planner": demonstrations.planner_rows, "actor": demonstrations.actor_rows}


def _study_config(study_dir: str) -> dict:
  path = os.path.join(study_dir, "config.json")
  if not os.path.isfile(path):
    raise FileNotFoundError(f"{study_dir!r} is not a conpact/study run directory (no config.json)")
  with open(path, encoding="utf-8") as f:
    return json.load(f)


def _held_out(study: dict, role: str, held: dict, seed: int) -> list[dict]:
  """Rows of the source instances after the study's own, without misperception."""
  data, out = study["data"], []
  for env_id in ["sokoban"] + list(study["minigrid_tasks"]):
    start = data["sokoban"] if env_id == "sokoban" else data["babyai"]
    n = held["sokoban"] if env_id == "sokoban" else held["babyai"]
    top = (splits.BUDGETS["sokoban"].source if env_id == "sokoban"
           else len(demonstrations.MINIGRID_SOURCE_SEEDS))
    out += ROLES_ROWS[role](env_id, list(range(start, min(start + n, top))), 0.0, seed)
  return out


def run(config, workdir):
  study = _study_config(config.study_dir)
  table = []
  for role in config.roles:
    export = os.path.join(config.study_dir, "base", role, "export")
    b = copy.deepcopy(config.backend)
    b.model.checkpoint = export
    backend = factory.make_backend(b, workdir=workdir)
    sets = {"train": read_jsonl(os.path.join(config.study_dir, "data", f"{role}.jsonl")),
            "held_out": _held_out(study, role, config.held_out, config.seed)}
    for name, rows in sets.items():
      picked = field_probe.initial_rows(rows, config.per_env, config.seed)
      for r in field_probe.probe(picked, backend, config.max_tokens):
        table.append({"role": role, "rows_from": name, **r})
    backend.close()
  write_summary(workdir, {"study": config.study_dir, "table": table}, table,
                title="ConPAct field probe (teacher-forced prompts, greedy)",
                key=("role", "rows_from", "env", "field"),
                notes=("Shares of the rows probed: `stated` = the field is parseable and not "
                       "unknown, `as_demonstrated` = stated and equal to the row's target "
                       "belief, `correct` = stated and equal to the truth. held_out rows have "
                       "no misperception (target = truth)."))
  return {"table": table}
