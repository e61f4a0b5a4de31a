"""The study's supervision rows: expert play on the SOURCE split, per role, as jsonl.

`build` calls `agents.conpact.demonstrations` for every env of the study (Sokoban and the BabyAI
tasks) and returns three row sets:
  planner   misperceiving demonstrator with probability `noise`, stream `seeds.planner`, plus
            discussion rows (share `discuss`: ConPAct-I's conflict turn, then a fresh look)
  actor     the same recipe on its own stream `seeds.actor` (planner and actor misperceive
            independently, so their assertions can contradict each other), plus ReAct-format
            rows (the ReAct baseline runs the actor model)
  baseline  plain Plan-Act demonstrations (noise 0), both roles, `meta.role` set: the token-matched
            continued-SFT baseline of ConPAct-R/S (configs/conpact/train.py `baseline.rows`)
Row format: {"messages", "target", "meta"} (demonstrations.py). Noise rates are fixed in the
study config; nothing here looks at the evaluation split. The row files are written and read
with `lib.run.jsonl`.
"""
from agents.conpact import demonstrations

ROLES = ("planner", "actor")


def source_indices(env_id: str, sokoban: int, babyai: int) -> list[int]:
  """Source instance indices of one env: the first `sokoban` levels or `babyai` seeds per task.

  Args:
    env_id: "sokoban" or a BabyAI task id.
    sokoban: Sokoban source levels to play (<= 100, envs.splits).
    babyai: source seeds per BabyAI task (<= len(MINIGRID_SOURCE_SEEDS)).
  Returns:
    range-like list of indices.
  """
  if demonstrations.schema_name(env_id) == "sokoban":
    return list(range(sokoban))
  return list(range(min(babyai, len(demonstrations.MINIGRID_SOURCE_SEEDS))))


def build(env_ids, sokoban: int, babyai: int, noise: dict, seeds: dict, discuss: float = 0.0,
          react: bool = True, recheck: float | None = None) -> dict[str, list[dict]]:
  """The planner, actor and baseline rows of every env.

  Args:
    env_ids: "sokoban" and/or BabyAI task ids.
    sokoban, babyai: source instances (see `source_indices`).
    noise: {"planner": p, "actor": p} misperception probabilities.
    seeds: {"planner": s, "actor": s} noise-stream seeds (must differ).
    discuss: share of planner / actor rows followed by a discussion row (demonstrations.py).
    react: also give the actor ReAct-format rows (the ReAct baseline runs the actor model).
    recheck: None (a discussion redraws the whole belief) or the targeted re-check's failure
      rate (demonstrations.py).
  Returns:
    {"planner": rows, "actor": rows, "baseline": rows}.
  """
  if seeds["planner"] == seeds["actor"]:
    raise ValueError("planner and actor need separate noise seeds (got "
                     f"{seeds['planner']} for both)")
  out = {"planner": [], "actor": [], "baseline": []}
  for env_id in env_ids:
    idx = source_indices(env_id, sokoban, babyai)
    out["planner"] += demonstrations.planner_rows(env_id, idx, noise["planner"], seeds["planner"],
                                                  discuss=discuss, recheck=recheck)
    out["actor"] += demonstrations.actor_rows(env_id, idx, noise["actor"], seeds["actor"],
                                              discuss=discuss, recheck=recheck)
    if react:
      out["actor"] += demonstrations.actor_rows(env_id, idx, noise["actor"], seeds["actor"],
                                                react=True)
    out["baseline"] += demonstrations.planner_rows(env_id, idx, 0.0, seeds["planner"])
    out["baseline"] += demonstrations.actor_rows(env_id, idx, 0.0, seeds["actor"])
  return out


def stats(rows: list[dict]) -> dict:
  """Counts of a row set: rows, misperceiving rows (noisy), rows whose belief is wrong,
  discussion rows, ReAct-format rows."""
  return {"rows": len(rows), "noisy": sum(r["meta"]["noisy"] for r in rows),
          "wrong": sum(r["meta"]["wrong"] for r in rows),
          "discussion": sum(bool(r["meta"].get("discussion")) for r in rows),
          "recheck_failed": sum(bool(r["meta"].get("recheck_failed")) for r in rows),
          "react": sum(bool(r["meta"].get("react")) for r in rows)}


def corpus(rows: list[dict]):
  """Texts a tokenizer is trained on: every message and target of the rows."""
  for r in rows:
    for m in r["messages"]:
      yield m["content"]
    yield r["target"]
