"""Per-episode metrics rows and per-condition tables laid out like the paper's.

Episode row: terminal success, raw validity (every generation parsed), commitment validity
(a resolved, materialized commitment was formed), verified handoff, model calls, wire bytes,
executor actions, failure code. Condition table: success with a cluster-bootstrap 95% CI
(role views averaged within a cluster first, 10,000 resamples, fixed seed) and the
Clopper-Pearson interval over episodes; paired differences against a reference condition use
the paired cluster bootstrap.
"""
import numpy as np

from agents.gencoord import capability
from agents.gencoord.protocol import Record, Success
from agents.gencoord.skills import value
from lib.report import stats

_FORMED = ("EXECUTION_FAILURE", "HANDOFF_FAILURE", "TERMINAL_FAILURE")


def episode_row(rec: Record) -> dict:
  """One results.jsonl row for an episode's record (the policy's name under "backend", the
  field configs name a condition's policy with)."""
  ep = rec.ep
  code = rec.failure_code
  c = rec.commitment
  return {
      "condition": rec.condition, "backend": rec.policy, "episode_id": ep.episode_id,
      "cluster_id": ep.cluster_id, "template": ep.template, "role_view": ep.role_view,
      "binding_true": ep.binding, "binding_committed": c.binding if c else None,
      "success": rec.success, "raw_valid": rec.raw_valid,
      "commitment_valid": isinstance(rec.result, Success) or code in _FORMED,
      "handoff_verified": rec.handoff_verified, "model_calls": rec.model_calls,
      "receiver_follows_request": rec.receiver_follows_request,
      "wire_bytes": rec.wire_bytes, "response_bytes": rec.response_bytes,
      "aggregation_bytes": rec.aggregation_bytes, "executor_actions": rec.executor_actions,
      "failure_code": code, "fields": commitment_fields(c) if c else None,
  }


def commitment_fields(c) -> dict:
  """Craft actor, handoff item/count, peer suffix and goal fields of a commitment (S19)."""
  crafts_self = any(n.skill == "craft.item" for n in c.sender_path)
  last = c.receiver_path[-1]
  return {"craft_actor": "requester" if crafts_self else "peer", "handoff_item": c.handoff[2],
          "handoff_count": c.handoff[3], "peer_suffix": [n.skill for n in c.receiver_path],
          "goal_item": value(last, "item"), "goal_count": value(last, "q")}


def branch_fields(ep, branch_id: str) -> dict:
  """The same fields for the canonical branch `branch_id` of an episode's template."""
  f = capability.handoff_fields(ep.branch(branch_id))
  last = ep.branch(branch_id).receiver_path[-1]
  return {"craft_actor": f["craft_actor"], "handoff_item": f["handoff_item"],
          "handoff_count": f["handoff_count"], "peer_suffix": list(f["peer_suffix"]),
          "goal_item": last.args["item"], "goal_count": last.args["q"]}


def field_fidelity(rows, episodes) -> list:
  """Counterfactual feedback (S19): per commitment field, how many commitments match the
  injected branch and the true-world branch.

  Args:
    rows: `episode_row` dicts of one counterfactual condition.
    episodes: the Goal x Capability episodes the rows belong to.
  Returns:
    One {field, matches_injected, matches_true_world} row per field ("k/n" over the rows that
    formed a commitment).
  """
  by_id = {ep.episode_id: ep for ep in episodes}
  fields = ("craft_actor", "handoff_item", "handoff_count", "peer_suffix", "goal_item",
            "goal_count")
  counts = {f: [0, 0] for f in fields}
  n = 0
  for r in rows:
    if r["fields"] is None:
      continue
    ep = by_id[r["episode_id"]]
    other = "FINISHED_RECEIVER" if ep.peer_mode == "RAW_PROCESSOR" else "RAW_PROCESSOR"
    injected = branch_fields(ep, capability.MODE_BRANCH[other])
    true = branch_fields(ep, ep.binding)
    n += 1
    for f in fields:
      counts[f][0] += r["fields"][f] == injected[f]
      counts[f][1] += r["fields"][f] == true[f]
  return [{"field": f, "matches_injected": f"{a}/{n}", "matches_true_world": f"{b}/{n}"}
          for f, (a, b) in counts.items()]


def by_cluster(rows, field: str = "success") -> dict:
  out: dict = {}
  for r in rows:
    out.setdefault(r["cluster_id"], []).append(float(r[field]))
  return out


def _cluster_means(rows, field="success") -> dict:
  return {k: [float(np.mean(v))] for k, v in by_cluster(rows, field).items()}


# What condition_row's terse columns count, for the notes under a summary table.
CONDITION_COLUMNS = (
    "Columns: `episodes` and `clusters` are counts per condition; `strict` = clusters whose "
    "every episode succeeded / clusters; `follows_req` = episodes whose receiver followed the "
    "delivered request / episodes with a request; `calls` (model calls), `wire_B` (bytes on the "
    "wire), `response_B`, `aggregation_B` and `actions` (executor actions) are means per "
    "episode; `–` = not applicable.")


def condition_row(name: str, rows: list, n_resamples: int = 10_000, seed: int = 0) -> dict:
  n = len(rows)
  wins = sum(bool(r["success"]) for r in rows)
  means = _cluster_means(rows)
  lo, hi = stats.bootstrap_ci(means, n_resamples=n_resamples, seed=seed)
  cp_lo, cp_hi = stats.clopper_pearson(wins, n)
  strict = sum(all(v) for v in by_cluster(rows).values())
  follows = [r["receiver_follows_request"] for r in rows
             if r.get("receiver_follows_request") is not None]
  mean = lambda f: float(np.mean([float(r[f]) for r in rows]))  # noqa: E731
  return {"condition": name, "episodes": n, "clusters": len(means),
          "success_%": 100.0 * wins / n, "ci95_%": f"[{100 * lo:.1f}, {100 * hi:.1f}]",
          "clopper_pearson_%": f"[{100 * cp_lo:.1f}, {100 * cp_hi:.1f}]",
          "strict": f"{strict}/{len(means)}", "raw_valid_%": 100 * mean("raw_valid"),
          "commitment_valid_%": 100 * mean("commitment_valid"),
          "handoff_verified_%": 100 * mean("handoff_verified"),
          "follows_req": f"{sum(follows)}/{len(follows)}" if follows else "-",
          "calls": mean("model_calls"),
          "wire_B": mean("wire_bytes"), "response_B": mean("response_bytes"),
          "aggregation_B": mean("aggregation_bytes"), "actions": mean("executor_actions")}


def paired_row(name: str, ref: str, rows_a: list, rows_b: list, n_resamples: int = 10_000,
               seed: int = 0) -> dict:
  """ref - condition in percentage points, cluster-paired."""
  a, b = _cluster_means(rows_a), _cluster_means(rows_b)
  if sorted(a) != sorted(b):
    raise ValueError(f"conditions {ref} and {name} cover different clusters")
  keys = sorted(a)
  diff = 100 * (np.mean([a[k][0] for k in keys]) - np.mean([b[k][0] for k in keys]))
  lo, hi = stats.paired_bootstrap_ci([a[k] for k in keys], [b[k] for k in keys],
                                     n_resamples=n_resamples, seed=seed)
  return {"comparison": f"{ref} - {name}", "delta_pp": float(diff),
          "ci95_pp": f"[{100 * lo:.1f}, {100 * hi:.1f}]"}


def block_paired_row(name: str, ref: str, rows_a: list, rows_b: list, block_of,
                     n_resamples: int = 10_000, seed: int = 0) -> dict:
  """Paired difference resampling blocks of clusters (e.g. the 20 matched capability pairs):
  outcomes are averaged within each block before resampling."""
  def blocks(rows):
    out: dict = {}
    for r in rows:
      out.setdefault(block_of(r["cluster_id"]), []).append(float(r["success"]))
    return {k: [float(np.mean(v))] for k, v in out.items()}
  a, b = blocks(rows_a), blocks(rows_b)
  keys = sorted(a)
  lo, hi = stats.paired_bootstrap_ci([a[k] for k in keys], [b[k] for k in keys],
                                     n_resamples=n_resamples, seed=seed)
  diff = 100 * (np.mean([a[k][0] for k in keys]) - np.mean([b[k][0] for k in keys]))
  return {"comparison": f"{ref} - {name} ({len(keys)} blocks)", "delta_pp": float(diff),
          "ci95_pp": f"[{100 * lo:.1f}, {100 * hi:.1f}]"}
