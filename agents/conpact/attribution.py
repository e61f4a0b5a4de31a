"""Why episodes fail: failure attribution (paper Figure 1b), sub-goal adherence (Figure 2b) and
state-assertion consistency/correctness CC/CW (Table 23), from the records of results rows.

Sub-goal adherence: each action of a two-role agent is logged with the sub-goal it was taken under
and its index within that sub-goal (`row["agent"]["plan"]`, see plan_act.py). An env's judge reads
the sub-goal text and says whether the action follows it, or None when the sub-goal does not say:
  sokoban   a sub-goal that names moves ("moves: right, up, ...") is the sequence to execute: the
            j-th action under it adheres iff it is the j-th named move (judged while moves remain)
  minigrid  a sub-goal that places the target ("reach the target F forward, R right", egocentric
            at the sub-goal-start frame) is judged on its first action only (later actions move
            the frame): adherent actions approach the target -- "go forward" when F >= 1, a turn
            towards its side (either turn when F <= 0 and R = 0), "pick up"/"done" at (1, 0)
Other envs and free-form sub-goals are not judged (reported as coverage, never as adherent).
  subgoal_adherence    mean over rollouts (with >= 1 judged action) of adherent / judged actions
  adherence_coverage   judged actions / actions taken under a sub-goal

Failure attribution, over failed rollouts (not success; backend/agent errors left out). Labels are
not exclusive (the paper's shares sum to more than 100%):
  state mismatch       >= 1 comparable check had an initial contradiction (judged when the rollout
                       had >= 1 comparable check)
  plan non-adherence   >= 1 judged action did not follow its sub-goal (judged when >= 1 action was)
  capability           neither: consistent state and adherent actions, still failed (judged when
                       both labels were)
Each share's denominator is the failed rollouts where it could be judged (`fail_judged_*`).

CC/CW (Table 23), over (check, field) pairs that both roles stated and whose ground truth is known:
CC = the roles agree and are right, CW = they agree and are wrong, D_field = they disagree
(CC + CW + D_field = 1). `*_delta` = the same after discussion (the discussed checks' final
assertions; undiscussed checks unchanged) minus initial, in probability units.
"""
import re
from typing import Callable

import numpy as np

from agents.conpact import metrics

_MOVE = re.compile(r"\b(up|down|left|right)\b")
_TARGET = re.compile(r"(-?\d+)\s+forward,\s*(-?\d+)\s+right")
EXCLUDED_STATUS = ("backend_error", "agent_error", "env_error")   # not the method's failures


def sokoban_adheres(subgoal: str, step: int, action: str) -> bool | None:
  """The `step`-th action under a sub-goal that names moves follows it iff it is that move."""
  moves = _MOVE.findall(subgoal.lower())
  if step >= len(moves):
    return None
  return action == moves[step]


def minigrid_adheres(subgoal: str, step: int, action: str) -> bool | None:
  """The first action under a sub-goal that places the target approaches that target."""
  m = _TARGET.search(subgoal)
  if m is None or step != 0:
    return None
  forward, right = int(m.group(1)), int(m.group(2))
  if (forward, right) == (1, 0):
    return action in ("pick up", "done")
  towards = {"turn left"} if right < 0 else {"turn right"} if right > 0 else set()
  if forward >= 1:
    towards.add("go forward")
  elif right == 0:
    towards = {"turn left", "turn right"}
  return action in towards


ADHERENCE: dict[str, Callable[[str, int, str], bool | None]] = {
    "sokoban": sokoban_adheres,
    "minigrid": minigrid_adheres,
}


def judged_actions(row: dict, env: str) -> list[bool]:
  """Adherence of each judged action of a rollout, in order."""
  judge = ADHERENCE.get(env)
  plan = (row.get("agent") or {}).get("plan") or []
  if judge is None:
    return []
  verdicts = [judge(p["subgoal"], p["step"], p["action"]) for p in plan]
  return [v for v in verdicts if v is not None]


def subgoal_adherence(rows, env: str) -> dict:
  """Mean per-rollout adherence and its coverage; see module doc."""
  per_rollout, judged, planned = [], 0, 0
  for row in rows:
    v = judged_actions(row, env)
    planned += len((row.get("agent") or {}).get("plan") or [])
    judged += len(v)
    if v:
      per_rollout.append(float(np.mean(v)))
  return {"subgoal_adherence": float(np.mean(per_rollout)) if per_rollout else None,
          "adherence_coverage": metrics.ratio(judged, planned)}


def failure_labels(row: dict, env: str) -> dict:
  """state_mismatch / non_adherence / capability of one rollout: True, False or None (unjudged)."""
  judged = [p for p in metrics.records(row, "pair") if metrics.is_comparable(p)]
  mismatch = any(p["conflicts"] for p in judged) if judged else None
  verdicts = judged_actions(row, env)
  non_adherence = (not all(verdicts)) if verdicts else None
  capability = None if mismatch is None or non_adherence is None else \
      not mismatch and not non_adherence
  return {"state_mismatch": mismatch, "non_adherence": non_adherence, "capability": capability}


def failure_attribution(rows, env: str) -> dict:
  """Shares of failed rollouts per label (Figure 1b), each over the rollouts it could judge."""
  failed = [r for r in rows if not r["success"] and r.get("status") not in EXCLUDED_STATUS]
  labels = [failure_labels(r, env) for r in failed]
  out = {"failed": len(failed)}
  for name in ("state_mismatch", "non_adherence", "capability"):
    seen = [lab[name] for lab in labels if lab[name] is not None]
    out[f"fail_{name}"] = metrics.ratio(sum(seen), len(seen))
    out[f"fail_judged_{name}"] = len(seen)
  return out


def _cc_cw(planner: dict, actor: dict, truth: dict | None) -> tuple[int, int, int]:
  cc = cw = d = 0
  for k, p in planner.items():
    a = actor.get(k)
    if p is None or a is None or truth is None or truth.get(k) is None:
      continue
    if p != a:
      d += 1
    elif p == truth[k]:
      cc += 1
    else:
      cw += 1
  return cc, cw, d


def consistency_correctness(rows) -> dict:
  """CC, CW, D_field (initial) and their changes after discussion; see module doc."""
  initial, final = np.zeros(3, int), np.zeros(3, int)
  for row in rows:
    for rec in metrics.records(row, "pair"):
      p, a = rec["planner"]["values"], rec["actor"]["values"]
      initial += _cc_cw(p, a, rec["truth"])
      d = rec.get("discussion")
      if d is not None:
        p, a = d["planner"]["values"], d["actor"]["values"]
      final += _cc_cw(p, a, rec["truth"])
  n, n_final = int(initial.sum()), int(final.sum())
  out = {"cc_fields": n}
  for i, name in enumerate(("CC", "CW", "D_field")):
    before = metrics.ratio(int(initial[i]), n)
    after = metrics.ratio(int(final[i]), n_final)
    out[name] = before
    out[f"{name}_delta"] = None if before is None or after is None else after - before
  return out


def summarize(rows, env: str) -> dict:
  """Every metric of this module for one method/condition on `env`.

  Args:
    rows: results rows of one env and condition.
    env: env name; picks the sub-goal adherence judge (`ADHERENCE`; others are not judged).
  Returns:
    metric name -> value; None where a metric had no inputs.
  """
  return {**consistency_correctness(rows), **subgoal_adherence(rows, env),
          **failure_attribution(rows, env)}
