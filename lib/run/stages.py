"""Resumable pipeline stages: each stage's status and wall / CPU seconds in <workdir>/stages.json.

    stages = Stages(workdir)
    rows = stages.run("data", lambda: build_rows(...))     # first session: computes, saves, times
    rows = stages.run("data", lambda: build_rows(...))     # a later session: the saved result
    path = stages.run("sft", lambda: warm_start(...), rerun=True)   # runs again in every session

Used by the studies of agents/conpact/learned (experiments/conpact/study.py) and the world-model
audit's pipelines (experiments/wm/demo.py, study.py).
"""
import json
import os
import resource
import time

from absl import logging

STATUSES = ("running", "done", "failed")


def cpu_s() -> float:
  """CPU seconds of this process and its finished child processes (a JVM, game generators)."""
  self_, kids = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
  return self_.ru_utime + self_.ru_stime + kids.ru_utime + kids.ru_stime


class Stages:
  """The stages of one run directory and their record, <workdir>/stages.json.

  The file is one JSON object, stage name -> record, in the order the stages first ran:

    stage     the name again (so that the records read as table rows)
    status    "running" (started; a record left so means the session was killed),
              "done" or "failed"
    rerun     false: a done stage is skipped in later sessions and returns `result`;
              true: the stage runs in every session (its body resumes from its own outputs,
              and a later session may change what it must produce, e.g. more conditions)
    result    the stage's JSON-serialisable return value (skipped stages only: rerun false)
    error     "<ExceptionType>: <first line>" of a failed session
    sessions  how many sessions ran the stage
    wall_s, cpu_s  seconds summed over those sessions (CPU includes child processes)

  A stage that failed or was interrupted is not done, so the next session runs it again.
  """

  def __init__(self, workdir: str):
    self.path = os.path.join(workdir, "stages.json")
    os.makedirs(workdir, exist_ok=True)
    self.rows: dict = {}
    if os.path.exists(self.path):
      with open(self.path, encoding="utf-8") as f:
        self.rows = json.load(f)
    self.skipped: list[str] = []

  def done(self, name: str) -> bool:
    """True when a stage of that name finished in this or an earlier session."""
    return self.rows.get(name, {}).get("status") == "done"

  def run(self, name: str, fn, rerun: bool = False):
    """fn()'s result; a done stage (rerun=False) returns its saved result instead of running.

    Args:
      name: the stage's name (a key of stages.json).
      fn: computes the stage (no arguments); with rerun=False its result must be
        JSON-serialisable (paths, counts, small reports), bulky outputs go to files it writes.
      rerun: run the stage in every session and keep no result (see the class doc).
    Returns:
      The stage's result.
    """
    if not rerun and self.done(name):
      self.skipped.append(name)
      logging.info("stage %s: done earlier, skipped", name)
      return self.rows[name]["result"]
    before = self.rows.get(name, {})
    row = {"stage": name, "status": "running", "rerun": rerun,
           "sessions": before.get("sessions", 0) + 1,
           "wall_s": before.get("wall_s", 0.0), "cpu_s": before.get("cpu_s", 0.0)}
    self.rows[name] = row
    self._save()
    t, c = time.perf_counter(), cpu_s()

    def finish(status: str, **extra) -> None:
      row.update(status=status, wall_s=round(row["wall_s"] + time.perf_counter() - t, 1),
                 cpu_s=round(row["cpu_s"] + cpu_s() - c, 1), **extra)
      self._save()

    try:
      result = fn()
    except BaseException as e:   # recorded, then raised as it was (KeyboardInterrupt too)
      lines = str(e).strip().splitlines()
      finish("failed", error=f"{type(e).__name__}: {lines[0] if lines else ''}".rstrip(": "))
      raise
    finish("done", **({} if rerun else {"result": result}))
    logging.info("stage %s: %.1fs wall", name, row["wall_s"])
    return result

  def _save(self) -> None:
    tmp = self.path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
      json.dump(self.rows, f, indent=1)
    os.replace(tmp, self.path)

  def timings(self) -> list[dict]:
    """[{stage, wall_s, cpu_s}] in the order the stages first ran."""
    return [{"stage": r["stage"], "wall_s": r["wall_s"], "cpu_s": r["cpu_s"]}
            for r in self.rows.values()]
