"""The study report's entry point over hand-built episode rows of several conditions and seeds."""
import json
import os

import pytest

from agents.wm import study_report, termination, traces
from lib.backends.protocol import Completion

ADM = ["go north", "take rusty key", "open wooden box"]


class _Judge:
  name = "fake-judge"

  def __init__(self):
    self.calls = 0

  def generate(self, convs, params):
    del params
    self.calls += 1
    return [Completion(text='{"n_candidates": 2, "rejected": "yes"}') for _ in convs]


def _rows(make_row):
  """BASE (one seed) and GRPO-GT / GRPO-MIS (seeds 0, 1); 3 tasks x 4 samples, 2 steps each.
  GRPO-GT solves every task, GRPO-MIS task 0 only, BASE none; BASE never writes reasoning."""
  out = {}
  for cond, seeds in (("BASE", [0]), ("GRPO-GT", [0, 1]), ("GRPO-MIS", [0, 1])):
    for seed in seeds:
      rows = []
      for level in range(3):
        for sample in range(4):
          solved = cond == "GRPO-GT" or (cond == "GRPO-MIS" and level == 0)
          think = "" if cond == "BASE" else "take the rusty key or go north, but the key first"
          first = ADM[sample % 2] if cond != "GRPO-MIS" else "go north"
          steps = [(f"<think>{think}</think><action>{first}</action>", first, f"seen {first}"),
                   (f"<think>{think}</think><action>take rusty key</action>", "take rusty key",
                    "Taken.")]
          rows.append(make_row(cond, steps, "success" if solved else "action_budget",
                               admissible=ADM, level=level, sample=sample))
      out[(cond, seed)] = rows
  return out


def test_study_report_tables_sections_pngs(make_row, tmp_path):
  judge = _Judge()
  direct = {"BASE": [{"a": 1.0}], "GRPO-GT": [{"a": 0.5, "b": 0.5}], "GRPO-MIS": [{"b": 1.0}]}
  rows, sections, pngs = study_report.study_report(
      _rows(make_row), outdir=str(tmp_path), ks=(1, 2, 4, 8),
      trace_judge=traces.LLMTraceAnnotator(judge), direct_distributions=direct,
      n_resamples=200, min_samples=2)
  json.dumps(rows, allow_nan=False)                       # strict JSON
  tables = {r["table"] for r in rows}
  assert tables == {"paired_mcnemar", "paired_passk", "gains", "termination", "traces",
                    "overlap", "overlap_groups"}
  mc = [r for r in rows if r["table"] == "paired_mcnemar"]
  # GT vs BASE (2 seed pairs: BASE's one seed against each), MIS vs BASE (2), GT vs MIS (2)
  assert [(r["a"], r["b"], r["seed_a"], r["seed_b"]) for r in mc] == [
      ("GRPO-GT", "BASE", 0, 0), ("GRPO-GT", "BASE", 1, 0), ("GRPO-MIS", "BASE", 0, 0),
      ("GRPO-MIS", "BASE", 1, 0), ("GRPO-GT", "GRPO-MIS", 0, 0), ("GRPO-GT", "GRPO-MIS", 1, 1)]
  assert all(r["k"] == 4 and r["tasks"] == 3 for r in mc)
  assert [r["only_a"] for r in mc] == [3, 3, 1, 1, 2, 2]
  # k above the 4 attempts per task is dropped
  assert {r["k"] for r in rows if r["table"] == "paired_passk"} == {1, 2, 4}
  g = {(r["family"], r["k"], r["effect"]): r["diff"] for r in rows if r["table"] == "gains"}
  assert g[("GRPO", 1, "total")] == pytest.approx(100.0)
  assert g[("GRPO", 1, "knowledge")] == pytest.approx(100 * 2 / 3)
  assert g[("GRPO", 1, "zero-info")] is None                      # no COIN in this study
  term = [r for r in rows if r["table"] == "termination" and r["condition"] == "BASE"]
  assert len(term) == len(termination.TYPES) and term[0]["n"] == 12
  tr = {(r["condition"], r["annotator"]): r for r in rows if r["table"] == "traces"}
  assert len(tr) == 6 and judge.calls == 1                       # both annotators, one LLM call
  rule = "rule-based annotator (offline heuristic, not the paper's LLM judge)"
  assert tr[("BASE", rule)]["entity"] is None                     # no eligible step: null
  assert tr[("BASE", rule)]["sampled"] == 0 and tr[("BASE", rule)]["steps"] == 24
  assert tr[("GRPO-GT", rule)]["entity"] == 100.0                 # "key" was observed
  assert tr[("GRPO-GT", rule)]["revision"] == 100.0 and tr[("GRPO-GT", rule)]["sampled"] == 48
  assert tr[("GRPO-GT", "LLM judge (fake-judge)")]["candidates"] == 100.0
  ov = [r for r in rows if r["table"] == "overlap" and r["regime"] == "list"]
  assert {(r["a"], r["b"]) for r in ov} == {("BASE", "GRPO-GT"), ("BASE", "GRPO-MIS"),
                                            ("GRPO-GT", "GRPO-MIS")}
  # the first step of each task is shared: BASE and GT both alternate their first action
  base_gt = next(r for r in ov if (r["a"], r["b"]) == ("BASE", "GRPO-GT"))
  assert base_gt["overlap"] == pytest.approx(1.0) and base_gt["points"] == 3
  direct_rows = [r for r in rows if r["table"] == "overlap" and r["regime"] == "direct"]
  assert {(r["a"], r["b"]): r["overlap"] for r in direct_rows} == {
      ("BASE", "GRPO-GT"): 0.5, ("BASE", "GRPO-MIS"): 0.0, ("GRPO-GT", "GRPO-MIS"): 0.5}
  assert all(s.startswith("### ") for s in sections)
  assert any("rule-based annotator" in s and "LLM judge (fake-judge)" in s for s in sections)
  names = sorted(os.path.basename(p) for p in pngs)
  assert names == ["gains_textworld_list.png", "overlap_direct.png", "overlap_textworld_list.png",
                   "termination_textworld_list.png", "traces_textworld_list.png",
                   "traces_textworld_list_llm.png"]
  assert all(os.path.getsize(p) > 10_000 for p in pngs)


def test_overlap_can_pool_each_conditions_seeds(make_row, tmp_path):
  # the three tasks share their first prompt: 12 replies per (condition, seed) there, none
  # reaches 16 per seed, but GRPO-GT's and GRPO-MIS's two seeds pooled do (BASE, one seed, not)
  by_pool = {}
  for pool in (False, True):
    rows, _, _ = study_report.study_report(
        _rows(make_row), outdir=str(tmp_path / str(pool)), ks=(1,), n_resamples=50,
        min_samples=16, overlap_pool_seeds=pool)
    by_pool[pool] = {(r["a"], r["b"]): r for r in rows if r["table"] == "overlap"}
  assert all(r["points"] == 0 and r["overlap"] is None for r in by_pool[False].values())
  pooled = by_pool[True]
  assert pooled[("BASE", "GRPO-GT")]["points"] == 0
  # GT alternates "go north" / "take rusty key"; MIS always sends "go north"
  assert pooled[("GRPO-GT", "GRPO-MIS")]["points"] == 1
  assert pooled[("GRPO-GT", "GRPO-MIS")]["overlap"] == pytest.approx(0.5)
