"""How evaluation episodes end (the audit's Table 5, from the rows `experiments/wm/eval.py` writes).

Each episode row of `lib.hostloop.loop` carries a `status` and a transcript; the termination type
is read from them, first match wins:

  env error            the last step's info has `env_error` (the simulator died / hung / raised),
                       or `status == "env_error"` (its worker process hung or died,
                       lib/hostloop/executors.py): says nothing about the agent
  backend error        `status == "backend_error"` (a model call failed after its retries)
  agent error          `status == "agent_error"` (the agent raised: a bug)
  success              `status == "success"` (the env reported the task solved)
  env ended, unsolved  `status == "failure"`: the env ended the episode without success (a lost
                       game, ScienceWorld's negative score)
  step limit: invalid format   hit the step limit (`action_budget`, `call_budget`, or the env's
                       own time limit `truncated`) and the last `parse_run` steps all lacked a
                       parsed action (the audit's "consecutive parsing failures", which our host
                       loop does not stop on, so it is recognised at the step limit)
  step limit: looping  hit the step limit and the last step repeats an observation-action cycle
                       (TIDE loop mask of `agents.wm.metrics`; the audit's "repeated-action limit",
                       again recognised at the step limit rather than stopping the episode)
  step limit           hit the step limit otherwise (the audit's "turn budget exhausted")

The audit's "agent stop command" has no counterpart: our text envs have no stop action, the env
ends a solved episode itself (`success`).
"""
from typing import Mapping, Sequence

from agents.wm.metrics import loop_mask
from agents.wm.trajectory import PARSE_FAILURE_TAG
from lib.report import plots, stats

TYPES = ("success", "env ended, unsolved", "step limit", "step limit: looping",
         "step limit: invalid format", "env error", "backend error", "agent error")
_LIMIT = ("action_budget", "call_budget", "truncated")


def termination_type(row: Mapping, parse_run: int = 3) -> str:
  """The termination type (one of `TYPES`) of one host-loop episode row.

  Args:
    row: a results row with `status` and `transcript` (reset/call/action events).
    parse_run: how many final steps without a parsed action make "step limit: invalid format".
  Returns:
    The type; a row with an unknown status raises ValueError naming it.
  """
  status = row.get("status")
  actions = [e for e in row.get("transcript", ()) if e.get("type") == "action"]
  if status == "env_error" or (actions and (actions[-1].get("info") or {}).get("env_error")):
    return "env error"
  if status == "backend_error":
    return "backend error"
  if status == "agent_error":
    return "agent error"
  if status == "success":
    return "success"
  if status == "failure":
    return "env ended, unsolved"
  if status not in _LIMIT:
    raise ValueError(f"episode row has unknown status {status!r}")
  tags = [e.get("tag") for e in actions]
  if len(tags) >= parse_run and all(t == PARSE_FAILURE_TAG for t in tags[-parse_run:]):
    return "step limit: invalid format"
  resets = [e for e in row.get("transcript", ()) if e.get("type") == "reset"]
  obs = [resets[0].get("obs", "") if resets else ""] + [e.get("obs", "") for e in actions]
  acts = [None if e.get("tag") == PARSE_FAILURE_TAG else e.get("action") for e in actions]
  if acts and loop_mask(obs, acts)[-1]:
    return "step limit: looping"
  return "step limit"


def breakdown(rows_by_condition: Mapping[str, Sequence[Mapping]],
              parse_run: int = 3) -> list[dict]:
  """One row per (condition, termination type): episodes and percent of the condition's episodes.

  Args:
    rows_by_condition: condition -> its episode rows (all seeds pooled).
    parse_run: as in `termination_type`.
  Returns:
    Rows {"condition", "termination", "episodes", "percent", "n"} for every type in `TYPES`
    order (zero counts included, so conditions line up); percent is None for a condition
    without episodes.
  """
  out = []
  for cond, rows in rows_by_condition.items():
    types = [termination_type(r, parse_run) for r in rows]
    n = len(types)
    for t in TYPES:
      c = types.count(t)
      out.append({"condition": cond, "termination": t, "episodes": c,
                  "percent": 100.0 * c / n if n else None, "n": n})
  return out


def plot_breakdown(rows: Sequence[Mapping], path: str, title: str = "") -> str:
  """Grouped bars: percent of each condition's episodes per termination type (the types that
  occur), Clopper-Pearson 95% error bars, n = the condition's episodes; returns `path`."""
  conds = list(dict.fromkeys(r["condition"] for r in rows if r["n"]))
  types = [t for t in TYPES if any(r["termination"] == t and r["episodes"] for r in rows)]
  cell = {(r["condition"], r["termination"]): r for r in rows}
  series = []
  for t in types:
    vals, los, his, ns = [], [], [], []
    for c in conds:
      r = cell[(c, t)]
      lo, hi = stats.clopper_pearson(r["episodes"], r["n"])
      vals.append(r["percent"]), los.append(100 * lo), his.append(100 * hi), ns.append(r["n"])
    series.append(plots.Bars(t, vals, los, his, ns))
  fig, ax = plots.figure(max(6.0, 0.5 * len(conds) * max(len(types), 1) + 2.5), 3.8)
  plots.bar_with_ci(ax, conds, series, ylabel="episodes (%)",
                    title=(title + "\n" if title else "") +
                    "error bars: Clopper–Pearson 95%; n = episodes")
  return plots.save(fig, path)
