"""Resumable study stages: each stage's result is saved with a done marker and skipped on rerun.

    stages = Stages(workdir)
    rows = stages.run("data", lambda: build_rows(...))     # first run: computes, saves, times
    rows = stages.run("data", lambda: build_rows(...))     # later runs: the saved result

A stage's result must be JSON-serialisable (paths, counts, small reports); its bulky outputs live
in files the stage writes itself. <workdir>/stages.json holds, per stage, the result, `done`, and
wall / CPU seconds (summed over sessions when a stage was interrupted and rerun).
"""
import json
import os
import time

from absl import logging


class Stages:
  """The done markers and timings of a study's stages (<workdir>/stages.json)."""

  def __init__(self, workdir: str):
    self.path = os.path.join(workdir, "stages.json")
    os.makedirs(workdir, exist_ok=True)
    self.rows: dict = {}
    if os.path.exists(self.path):
      with open(self.path, encoding="utf-8") as f:
        self.rows = json.load(f)
    self.skipped: list[str] = []

  def done(self, name: str) -> bool:
    return bool(self.rows.get(name, {}).get("done"))

  def run(self, name: str, fn):
    """fn()'s result, computed once: a stage marked done returns its saved result instead.

    Args:
      name: the stage's name (a key of stages.json).
      fn: computes the stage (no arguments; its result must be JSON-serialisable).
    Returns:
      The stage's result.
    """
    if self.done(name):
      self.skipped.append(name)
      logging.info("stage %s: done earlier, skipped", name)
      return self.rows[name]["result"]
    t, c = time.perf_counter(), time.process_time()
    result = fn()
    before = self.rows.get(name, {"wall_s": 0.0, "cpu_s": 0.0})
    self.rows[name] = {"stage": name, "done": True, "result": result,
                       "wall_s": round(before["wall_s"] + time.perf_counter() - t, 1),
                       "cpu_s": round(before["cpu_s"] + time.process_time() - c, 1)}
    self._save()
    logging.info("stage %s: %.1fs wall", name, self.rows[name]["wall_s"])
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
