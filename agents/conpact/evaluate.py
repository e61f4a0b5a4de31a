"""ConPAct evaluation: methods/conditions x envs x instances x rollouts through the host loop.

For each env in `config.envs` and each condition in `config.conditions` (a method from
agents/conpact/methods.py plus AgentConfig settings, e.g. the Table 18 switches or state
injection), every instance runs `rollouts` times through `HostLoop`: one loop per env and budget
A = C runs the episodes of every condition together (one batched backend call per step across
all live episodes of all conditions). `config.split` = "source" runs source instances (Sokoban
source levels, BabyAI source seeds) for ConPAct-R/S curation. Rows go to results.jsonl keyed by
env/condition/instance/rollout/attempt (resumable; failed backend episodes are retried).

Backends: `config.backend` (a lib.backends.factory config) serves every role, or
`config.actor_backend` when non-empty serves the actor while `config.backend` serves the planner
(RoleRouter). Kind "scripted" uses the ConPAct scripted policy with `config.scripted` noise --
SCRIPTED numbers are mechanics, and every table title says so. On scripted runs the comparator's
precision/recall is computed against labels replayed from the policy (agents/conpact/labels.py).

summary.json: one row per env x condition with every metric of agents/conpact/metrics.py and
attribution.py (None = null where a metric had no inputs, e.g. D when no check was comparable).
summary.md: performance (paper Tables 19/24 layout), mismatch with assertion coverage, CC/CW
(Table 23), failure attribution and sub-goal adherence (Figures 1b/2b), cost, and, when conditions
carry ablation switches, the online-consistency ablation table (Table 18 layout); empty cells are
"–", D without a comparable check is "n/a". demo.png: success with CIs and initial vs residual D
per condition (agents/conpact/figure.py). summary.json "paired" (and a summary.md table): each
condition's success minus Plan-Act's and Assertion's (`config.paired_vs`) over (instance,
rollout) pairs, paired cluster bootstrap CI and exact McNemar p (study_tables.paired_tests).
"""
import os

from absl import logging

from agents.conpact import (attribution, figure, labels, metrics, methods, schemas, scripted,
                            study_tables, textenv)
from agents.conpact.routing import RoleRouter
from lib.backends.factory import make_backend
from lib.backends.scripted import NoiseModel
from lib.hostloop.executor_factory import make_executor
from lib.hostloop.loop import EpisodeJob, HostLoop, final_rows
from lib.run import tb
from lib.run.results import ResultsLog, markdown_table, write_summary

KEY = ("env", "condition", "instance", "rollout", "attempt")
SWITCHES = ("correction_trigger", "conflict_feedback", "planner_participation")
PAIRED_NOTE = ("`model` (condition) minus `against` (reference) over episodes paired by "
               "(instance, rollout): diff_pp = success difference in points, ci95_pp = 95% "
               "paired bootstrap over instances, only_* = pairs only one side solved, p_mcnemar "
               "= exact McNemar, p_holm = Holm-adjusted per reference "
               "(agents/conpact/study_tables.py).")


def instances(config, env: str) -> list[textenv.Instance]:
  n = config.instances
  if env == "sokoban":
    return textenv.sokoban_instances(config.split, n)
  if env == "minigrid":
    return textenv.minigrid_instances(tuple(config.minigrid_tasks), per_task=config.minigrid_per_task,
                                      split=config.split)
  if env == "crafter":
    return textenv.crafter_instances(config.split, n)
  if env.startswith("procgen-"):
    return textenv.procgen_instances(env, config.split, n)
  raise KeyError(f"unknown env {env!r}")


def _one_backend(cfg, env, config, workdir):
  cfg = dict(cfg.to_dict() if hasattr(cfg, "to_dict") else cfg)
  policy = None
  if cfg["kind"] == "scripted":
    policy = scripted.ConPActScriptedPolicy(env, NoiseModel(dict(config.scripted.noise)),
                                            abstain=config.scripted.abstain)
  return make_backend(cfg, workdir=workdir, policy=policy), policy


def build_backend(config, env, workdir):
  """(backend for the host loop, scripted policy or None, the scripted backend's seed)."""
  planner, policy = _one_backend(config.backend, env, config, workdir)
  seed = getattr(planner, "seed", 0)
  if not config.actor_backend:   # {}: the planner's backend plays both roles
    return planner, policy, seed
  actor, _ = _one_backend(config.actor_backend, env, config, workdir)
  return RoleRouter({"planner": planner, "actor": actor}), policy, seed


def _budget(config, inst) -> int:
  """A = C for an instance; `budget_cap` > 0 shortens it (CPU demos of slow backends)."""
  return min(inst.actions, config.budget_cap) if config.budget_cap else inst.actions


def _specs(config, env, cond, insts):
  task = textenv.task(env)
  settings = dict(cond.get("settings", {}))
  make_agent = lambda: methods.make_agent(cond["method"], task, **settings)
  return [EpisodeJob({"env": env, "condition": cond["name"], "instance": i.instance_id,
                       "rollout": r}, make_env=i.make_env, make_agent=make_agent,
                      env_seed=i.env_seed, extra={"method": cond["method"]})
          for i in insts for r in range(config.rollouts)]


def _mark(v) -> str:
  return "✓" if v else "✗"


NA_WHEN_NONE = ("D_step", "D_traj", "residual_D", "residual_D_traj", "D_field", "D_field_delta")


def _cell(col: str, v):
  """A summary.md cell: CI tuples as [lo, hi]; None as "n/a" for D (nothing comparable), else "–"."""
  if v is None:
    return "n/a" if col in NA_WHEN_NONE else "–"
  if isinstance(v, (tuple, list)) and len(v) == 2:
    return f"[{v[0]:.3f}, {v[1]:.3f}]"
  return v


def _md_rows(table, cols) -> list[dict]:
  return [{c: _cell(c, r[c]) for c in cols} for r in table]


# summary.md section title -> its columns (after env, condition); the performance table comes first.
REPORT_TABLES = {
    "Mismatch over comparable checks": [
        "comparable_checks", "D_step", "D_traj", "residual_D", "residual_D_traj",
        "discussion_rate", "repair_rate"],
    "Assertion coverage and correctness": [
        "coverage_planner", "coverage_actor", "fields_planner", "fields_actor", "planner_correct",
        "actor_correct"],
    "Assertion consistency and correctness (paper Table 23 layout)": [
        "cc_fields", "CC", "CW", "D_field", "CC_delta", "CW_delta", "D_field_delta"],
    "Failure attribution (paper Figure 1b) and sub-goal adherence (Figure 2b)": [
        "failed", "fail_state_mismatch", "fail_non_adherence", "fail_capability",
        "fail_judged_capability", "subgoal_adherence", "adherence_coverage"],
    "Cost (paper Table 24 layout)": [
        "calls/episode", "out_tokens/episode", "calls/action", "usage_coverage",
        "backend_errors"],
}


NOTES = {
    "Mismatch over comparable checks": (
        "A check (planner and actor asserting about one frame) is comparable when both roles "
        "stated at least one field; comparable_checks = their share of all checks; D counts "
        "comparable checks only (n/a: none was comparable). residual_D = contradicted checks "
        "still contradicted after discussion; *_traj: the same per episode."),
    "Assertion coverage and correctness": (
        "coverage_* = share of a role's asserting calls with a parseable assertion block; "
        "fields_* = mean share of the schema's fields it stated; *_correct = stated applicable "
        "fields equal to the ground truth."),
    "Assertion consistency and correctness (paper Table 23 layout)": (
        "Over (check, field) pairs both roles stated with known ground truth (cc_fields): CC = "
        "agree and right, CW = agree and wrong, D_field = disagree; *_delta = after discussion "
        "minus initial."),
    "Failure attribution (paper Figure 1b) and sub-goal adherence (Figure 2b)": (
        "Shares of failed episodes (labels overlap): state mismatch, plan non-adherence, "
        "capability (neither); each over the failed episodes it could judge "
        "(fail_judged_capability: both labels judged). subgoal_adherence = mean per-episode share "
        "of judged actions that follow their sub-goal; adherence_coverage = judged / planned "
        "actions."),
}


def evaluate(config, workdir):
  """Runs every condition of `config` on every env and writes the report (see the module doc).

  Args:
    config: a conpact/eval config (configs/conpact/scripted.py, flax.py, openai.py).
    workdir: where results.jsonl, summary.json/md and demo.png go.
  Returns:
    The summary dict: label, table, ablation, comparator and paired rows.
  """
  scripted_run = config.backend.kind == "scripted"
  label = config.label or ("SCRIPTED policy (mechanics, not model results)" if scripted_run
                           else f"backend: {config.backend.kind}")
  log = ResultsLog(workdir, key=KEY)
  table, ablation, comparator, writer = [], [], [], tb.writer(workdir)
  paired_rows = []
  for env in config.envs:
    insts = instances(config, env)
    backend, policy, scripted_seed = build_backend(config, env, workdir)
    # Every condition's episodes share one host loop per budget (budgets differ only on
    # MiniGrid), so each backend call batches the live episodes of all conditions.
    specs, per_spec = [], []
    for cond in config.conditions:
      specs += _specs(config, env, cond, insts)
      per_spec += [_budget(config, i) for i in insts for _ in range(config.rollouts)]
    for a in sorted(set(per_spec)):
      group = [s for s, b in zip(specs, per_spec) if b == a]
      loop = HostLoop(backend, action_budget=a, call_budget=a, max_live=config.max_live,
                      seed=config.seed, progress_desc=f"{env} A=C={a}",
                      executor=lambda: make_executor(config.host))
      out = loop.run(group, log)
      logging.info("%s A=C=%d: %s", env, a, {k: out[k] for k in ("run", "skipped", "steps")})
    by_condition = {}
    for cond in config.conditions:
      wanted = {i.instance_id for i in insts}  # a resumed log may hold rows of other instances
      rows = [r for r in final_rows(log.rows(), KEY) if r["env"] == env
              and r["condition"] == cond["name"] and r["instance"] in wanted
              and r["rollout"] < config.rollouts]
      for r in rows:
        r["cluster"] = f"{env}/{r['instance']}"
      by_condition[cond["name"]] = rows
      m = {**metrics.summarize(rows, k=config.rollouts, n_resamples=config.n_resamples,
                               seed=config.seed), **attribution.summarize(rows, env)}
      row = {"env": env, "condition": cond["name"], "method": cond["method"], **m}
      table.append(row)
      for k in ("success", "D_step", "residual_D", "calls/episode"):
        if m[k] is not None:  # no inputs (e.g. no checks for a one-role method): nothing to log
          writer.add_scalar(f"{env}/{cond['name']}/{k}", m[k], 0)
      settings = cond.get("settings", {})
      if any(s in settings for s in SWITCHES):
        ablation.append({"env": env, "condition": cond["name"],
                         **{s: _mark(settings.get(s, True)) for s in SWITCHES},
                         f"avg@{config.rollouts}": m[f"avg@{config.rollouts}"],
                         f"pass@{config.rollouts}": m[f"pass@{config.rollouts}"],
                         f"pass^{config.rollouts}": m[f"pass^{config.rollouts}"],
                         "D_step": m["D_step"], "discussion_rate": m["discussion_rate"],
                         "repair_rate": m["repair_rate"], "residual_D": m["residual_D"]})
      if policy is not None and cond["method"] in ("assertion", "conpact_i"):
        conf = labels.comparator_confusion(rows, policy, scripted_seed, schemas.get(env))
        comparator.append({"env": env, "condition": cond["name"], **conf})
    for ref in config.paired_vs:
      if by_condition.get(ref):
        paired_rows += [{"env": env, **t} for t in study_tables.paired_tests(
            by_condition, ref, n_resamples=config.n_resamples, seed=config.seed)]
    backend.close()
  log.close()
  summary = {"label": label, "table": table, "ablation": ablation, "comparator": comparator,
             "paired": paired_rows}
  k = config.rollouts
  cols = ["env", "condition", f"avg@{k}", f"pass@{k}", f"pass^{k}", "success", "success_ci",
          "return", "steps", "episodes"]
  path = write_summary(workdir, summary, _md_rows(table, cols),
                       title=f"ConPAct inference ({label})",
                       notes=f"{k} rollouts per instance; `episodes` = instances x rollouts of "
                             "the row; CIs: 95% cluster bootstrap over instances.")
  png = figure.plot_demo(table, os.path.join(workdir, "demo.png"), f"ConPAct ({label})", k)
  with open(path, "a", encoding="utf-8") as f:
    for title, more in REPORT_TABLES.items():
      f.write(f"\n## {title} ({label})\n\n")
      if title in NOTES:
        f.write(NOTES[title] + "\n\n")
      f.write(markdown_table(_md_rows(table, ["env", "condition", *more])))
    if ablation:
      f.write(f"\n## Online consistency ablation (paper Table 18 layout; {label})\n\n")
      f.write(markdown_table(_md_rows(ablation, list(ablation[0]))))
    if paired_rows:
      f.write(f"\n## Paired success differences ({label})\n\n{PAIRED_NOTE}\n\n")
      f.write(markdown_table(_md_rows(paired_rows, list(paired_rows[0]))))
    if comparator:
      f.write(f"\n## Comparator vs independently labelled contradictions ({label})\n\n")
      f.write(markdown_table(_md_rows(comparator, list(comparator[0]))))
    f.write(f"\nFigure: {png}\n")
  return summary   # launch.py prints the summary's head and the figure paths (lib/run/console.py)
