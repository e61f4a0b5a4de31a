"""Resumable results log and summaries."""
import json
import os

import pytest

from lib.results import ResultsLog, markdown_table, write_summary


def test_resume_skips_rows_already_written(tmp_path):
  with ResultsLog(str(tmp_path), key=("task", "seed")) as log:
    log.append({"task": "a", "seed": 0, "success": True})
    log.append({"task": "a", "seed": 1, "success": False})
  log = ResultsLog(str(tmp_path), key=("task", "seed"))
  assert len(log) == 2
  assert log.has({"task": "a", "seed": 1})
  assert not log.has({"task": "b", "seed": 0})
  with pytest.raises(ValueError, match="duplicate"):
    log.append({"task": "a", "seed": 0, "success": True})
  log.append({"task": "b", "seed": 0, "success": True})
  log.close()
  lines = (tmp_path / "results.jsonl").read_text().splitlines()
  assert [json.loads(l)["task"] for l in lines] == ["a", "a", "b"]


def test_truncated_final_line_is_dropped_with_warning(tmp_path, caplog):
  path = tmp_path / "results.jsonl"
  path.write_text('{"k": 1, "v": 2}\n{"k": 2, "v": 3}\n{"k": 3, "v"')
  log = ResultsLog(str(tmp_path), key=("k",))
  assert [r["k"] for r in log.rows()] == [1, 2]
  assert not log.has({"k": 3})
  log.append({"k": 3, "v": 4})  # the torn row is redone and the file stays valid JSONL
  log.close()
  rows = [json.loads(l) for l in path.read_text().splitlines()]
  assert rows == [{"k": 1, "v": 2}, {"k": 2, "v": 3}, {"k": 3, "v": 4}]


def test_row_without_key_field_raises(tmp_path):
  with ResultsLog(str(tmp_path), key=("id",)) as log:
    with pytest.raises(KeyError, match="id"):
      log.append({"x": 1})


def test_numpy_values_serialise(tmp_path):
  import numpy as np
  with ResultsLog(str(tmp_path), key=("id",)) as log:
    log.append({"id": 0, "x": np.float32(0.5), "v": np.arange(3)})
  assert json.loads((tmp_path / "results.jsonl").read_text()) == {"id": 0, "x": 0.5,
                                                                 "v": [0, 1, 2]}


def test_write_summary_writes_json_and_markdown(tmp_path):
  table = [{"cond": "a", "succ": 0.5}, {"cond": "b|c", "succ": 1.0, "n": 3}]
  md_path = write_summary(str(tmp_path), {"n": 2}, table, title="T", notes="note")
  md = open(md_path).read()
  assert md.startswith("# T\n\nnote\n\n| cond | succ | n |")
  assert "| b\\|c | 1 | 3 |" in md
  data = json.loads((tmp_path / "summary.json").read_text())
  assert data["summary"] == {"n": 2} and data["table"][1]["n"] == 3
  assert markdown_table([]) == "(no rows)\n"
  assert os.path.exists(tmp_path / "summary.md")
