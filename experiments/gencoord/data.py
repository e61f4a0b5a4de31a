"""Writes GenCoord supervision JSONL files (prompt and target stored separately).

One file per (pool, surface): forward rows (sender proposal + receiver-after-request, plus the
single-step intermediate stage when enabled) and Goal x Capability rows. Every row is validated
against its binding before anything is written; a failing row aborts the run with its id.
"""
import os

from absl import logging

from agents.gencoord import data, suites
from agents.gencoord.learned import split_audit
from lib.run.jsonl import write_jsonl
from lib.run.results import write_summary


def run(config, workdir):
  table = []
  for pool in config.forward_pools:
    episodes = suites.suite(pool)
    for horizon in config.horizons:
      for surface in config.surfaces:
        rows = data.forward_rows(episodes, surface, horizon)
        name = f"{pool}_{surface}.jsonl" if horizon == "multi" else \
            f"{pool}_{horizon}_{surface}.jsonl"
        table.append(_write(rows, workdir, name, pool, surface))
  for pool in config.capability_pools:
    for surface in config.surfaces:
      rows = data.capability_rows(suites.suite(pool), surface, centralized=True)
      table.append(_write(rows, workdir, f"{pool}_{surface}.jsonl", pool, surface))
  write_summary(workdir, {"files": [r["file"] for r in table]}, table,
                title="GenCoord supervision data")
  return table


def _write(rows, workdir, name, pool, surface) -> dict:
  bad = [r.episode_id for r in rows if not data.validate(r)]
  if bad:
    raise ValueError(f"{len(bad)} rows do not map back to their binding, e.g. {bad[:3]}")
  n = write_jsonl(os.path.join(workdir, name), [split_audit.row_record(r) for r in rows],
                  sort_keys=True)
  stages = {}
  for r in rows:
    stages[r.stage] = stages.get(r.stage, 0) + 1
  logging.info("gencoord_data: %s: %d rows %s", name, n, stages)
  return {"file": name, "pool": pool, "surface": surface, "rows": n,
          **{f"rows_{k}": v for k, v in sorted(stages.items())}}
