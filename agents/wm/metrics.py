"""Per-episode behaviour metrics of the audit: success, score, turns, action failure, looping.

Loop ratio (TIDE, Yan et al. 2026a; the audit's Table 2 "LR"). Step t is the pair (o_t, a_t).
A *cycle* of length L starting at step s is a run of L pairwise-distinct observations
o_s..o_{s+L-1} after which the trajectory returns to o_s. Step u is *repeating* when it lies in a
block of L steps that exactly repeats the preceding cycle, observation and action alike:

    (o_{s+L+j}, a_{s+L+j}) == (o_{s+j}, a_{s+j})   for j = 0..L-1,   o_s..o_{s+L-1} distinct.

The first occurrence of a cycle is exploration, not looping; the second, third, ... occurrences
are repeating (overlapping blocks mark each step once). A block cut off by the episode end is not
a complete repeat and is not counted. Unparsed actions (None) compare equal to each other.

  step-normalised LR        repeating steps / all steps, pooled over trajectories
  trajectory-normalised LR  mean over trajectories of (repeating steps / steps)
  consecutive-repeat ratio  steps whose action equals the previous step's action / all steps

Action failure (AF) counts steps without an executed action: no parsable action, or the env
refused it (grammar or precondition failure, `Step.action_failed`). Turns counts all steps.
"""
from typing import Sequence

import numpy as np

from agents.wm.trajectory import Trajectory


def loop_mask(observations: Sequence[str], actions: Sequence[str | None]) -> np.ndarray:
  """Boolean [T] mask of repeating steps. `observations` holds o_0..o_{T-1} (or o_0..o_T)."""
  t_steps = len(actions)
  if len(observations) < t_steps:
    raise ValueError(f"{len(observations)} observations for {t_steps} actions")
  pairs = list(zip(observations[:t_steps], actions))
  mask = np.zeros(t_steps, dtype=bool)
  for length in range(1, t_steps // 2 + 1):
    for s in range(0, t_steps - 2 * length + 1):
      first = pairs[s:s + length]
      if len({o for o, _ in first}) != length:
        continue
      if pairs[s + length:s + 2 * length] == first:
        mask[s + length:s + 2 * length] = True
  return mask


def consecutive_repeats(actions: Sequence[str | None]) -> int:
  """Steps whose action equals the previous step's action."""
  return sum(actions[t] == actions[t - 1] for t in range(1, len(actions)))


def episode_metrics(traj: Trajectory) -> dict:
  """The per-episode row behind every table: success, score, turns, failures, loop counts."""
  turns = len(traj.steps)
  failures = sum(not s.executed for s in traj.steps)
  parse_failures = sum(s.action is None for s in traj.steps)
  loops = int(loop_mask(traj.observations, traj.actions).sum()) if turns else 0
  repeats = consecutive_repeats(traj.actions)
  return {"task_id": traj.task_id, "success": bool(traj.success), "score": float(traj.score),
          "turns": turns, "action_failures": failures, "parse_failures": parse_failures,
          "loop_steps": loops, "repeat_steps": repeats, "env_error": traj.env_error,
          "action_failure_rate": failures / turns if turns else 0.0,
          "loop_ratio": loops / turns if turns else 0.0,
          "repeat_ratio": repeats / turns if turns else 0.0}


def aggregate(rows: Sequence[dict], include_env_errors: bool = False) -> dict:
  """Pooled behaviour figures (percent) over episode rows from `episode_metrics`.

  Episodes that ended with a simulator error are left out unless `include_env_errors` (their
  count is reported either way), as they say nothing about the agent.
  """
  errors = sum(bool(r["env_error"]) for r in rows)
  rows = [r for r in rows if include_env_errors or not r["env_error"]]
  with_steps = [r for r in rows if r["turns"] > 0]
  steps = sum(r["turns"] for r in rows)
  pct = lambda num: 100.0 * num / steps if steps else float("nan")
  return {
      "episodes": len(rows), "env_errors": errors,
      "success": 100.0 * float(np.mean([r["success"] for r in rows])) if rows else float("nan"),
      "score": float(np.mean([r["score"] for r in rows])) if rows else float("nan"),
      "turns": float(np.mean([r["turns"] for r in rows])) if rows else float("nan"),
      "action_failure": pct(sum(r["action_failures"] for r in rows)),
      "loop_ratio_step": pct(sum(r["loop_steps"] for r in rows)),
      "loop_ratio_traj": 100.0 * float(np.mean([r["loop_ratio"] for r in with_steps]))
                         if with_steps else float("nan"),
      "repeat_ratio": pct(sum(r["repeat_steps"] for r in rows)),
  }
