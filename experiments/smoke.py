"""Smoke experiment: a seeded Bernoulli "agent" over synthetic tasks, scored like a real eval.

Each task has a latent success probability drawn from Beta(1, 1); each attempt is one row of
results.jsonl keyed by (task, attempt). The summary reports pass@k (unbiased), pass^k and a
task-bootstrap CI. Rerunning into the same workdir skips finished rows.
"""
import numpy as np
from absl import logging

from lib.report import stats
from lib.run import tb
from lib.run.progress import progress
from lib.run.results import ResultsLog, write_summary


def run(config, workdir):
  rng = np.random.default_rng(config.seed)
  probs = rng.beta(1.0, 1.0, size=config.tasks)
  # Outcomes drawn up front from the seed so a resumed run reproduces the same rows.
  outcomes = rng.random((config.tasks, config.attempts)) < probs[:, None]
  log = ResultsLog(workdir, key=("task", "attempt"))
  skipped = 0
  for t in progress(range(config.tasks), desc="tasks"):
    for a in range(config.attempts):
      row = {"task": t, "attempt": a, "success": bool(outcomes[t, a])}
      if log.has(row):
        skipped += 1
        continue
      log.append(row)
  log.close()
  logging.info("smoke: %d rows present, %d skipped on resume", len(log), skipped)

  by_task: dict[int, list[int]] = {}
  for row in log.rows():
    by_task.setdefault(row["task"], []).append(int(row["success"]))
  table = []
  writer = tb.writer(workdir)
  for k in config.ks:
    pk = np.mean([stats.pass_at_k(len(v), sum(v), k) for v in by_task.values()])
    phk = np.mean([stats.pass_hat_k(v, k) for v in by_task.values()])
    writer.add_scalar("smoke/pass_at_k", pk, k)
    table.append({"k": k, "pass@k": float(pk), "pass^k": float(phk)})
  lo, hi = stats.bootstrap_ci(list(by_task.values()), n_resamples=config.n_resamples,
                              seed=config.seed)
  mean = float(np.mean([np.mean(v) for v in by_task.values()]))
  summary = {"tasks": len(by_task), "rows": len(log), "skipped_on_resume": skipped,
             "avg_success": mean, "ci95": [lo, hi]}
  write_summary(workdir, summary, table, title="Smoke experiment",
                notes=f"Synthetic Bernoulli agent, {len(by_task)} tasks × {config.attempts} "
                      f"attempts; mean success {mean:.3f} (task-bootstrap 95% CI "
                      f"[{lo:.3f}, {hi:.3f}]).")
  return summary
