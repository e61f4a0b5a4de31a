"""Resumable results log and summaries."""
import json
import os

import pytest

from lib.run.results import ResultsLog, markdown_table, write_summary


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


def test_bad_lines_anywhere_are_moved_aside_and_every_valid_row_is_kept(tmp_path, caplog):
  path = tmp_path / "results.jsonl"
  lines = [json.dumps({"k": i, "v": i * i}) for i in range(4800)]
  lines[99] = '{"k": 99, "v": 98'         # corrupt (e.g. a disk error), not the last line
  lines[200] = "{}"                        # JSON but no key field
  lines[300] = "[1, 2]"                    # JSON but not a row
  path.write_text("\n".join(lines) + "\n" + '{"k": 4800, "v"')  # + a torn last line
  with caplog.at_level("WARNING"):
    log = ResultsLog(str(tmp_path), key=("k",))
  expected = [i for i in range(4800) if i not in (99, 200, 300)]
  assert [r["k"] for r in log.rows()] == expected
  assert not log.has({"k": 99}) and not log.has({"k": 4800})
  log.append({"k": 99, "v": 9801})
  log.close()
  assert [json.loads(l)["k"] for l in path.read_text().splitlines()] == expected + [99]
  rejected = [json.loads(l) for l in (tmp_path / "results.rejected.jsonl").read_text().splitlines()]
  assert [(r["line"], r["text"]) for r in rejected] == [
      (100, '{"k": 99, "v": 98'), (201, "{}"), (301, "[1, 2]")]
  moved = [r.getMessage() for r in caplog.records if "bad line" in r.getMessage()]
  assert len(moved) == 1 and "moved 3 bad line(s)" in moved[0]
  assert not os.path.exists(str(path) + ".tmp")


def test_clean_file_is_not_rewritten(tmp_path):
  path = tmp_path / "results.jsonl"
  path.write_text('{"k": 1}\n{"k": 2}\n')
  before = os.stat(path).st_ino
  ResultsLog(str(tmp_path), key=("k",)).close()
  assert os.stat(path).st_ino == before
  assert not os.path.exists(tmp_path / "results.rejected.jsonl")


def test_summary_json_is_strict_json(tmp_path):
  import numpy as np
  summary = {"mean": float("nan"), "best": float("inf"), "n": np.int64(3),
             "nested": [{"x": np.float32(float("nan")), "y": np.float64(0.25)}, (1, np.nan)]}
  write_summary(str(tmp_path), summary, [{"cond": "a", "succ": float("nan")}])
  text = (tmp_path / "summary.json").read_text()
  data = json.loads(text, parse_constant=lambda c: pytest.fail(f"bare {c} in summary.json"))
  assert data["summary"] == {"mean": None, "best": None, "n": 3,
                             "nested": [{"x": None, "y": 0.25}, [1, None]]}
  assert data["table"] == [{"cond": "a", "succ": None}]


def test_markdown_empty_cells_print_a_dash(tmp_path):
  md = markdown_table([{"cond": "a", "succ": float("nan"), "ci": "", "p": None},
                       {"cond": "b", "succ": 0.5, "ci": "-", "p": 0.01, "extra": 1}])
  assert "nan" not in md and "None" not in md
  assert "| a | – | – | – | – |" in md
  assert "| b | 0.5 | – | 0.01 | 1 |" in md


def test_an_interval_cell_prints_its_ends_like_numbers():
  md = markdown_table([{"cond": "a", "ci": [0.0625, 0.43828124999999574]},
                       {"cond": "b", "ci": (0, 1.0)}, {"cond": "c", "ci": ["x", "y"]}])
  assert "| a | [0.0625, 0.4383] |" in md and "| b | [0, 1] |" in md
  assert "| c | ['x', 'y'] |" in md     # not numbers: printed as they are


def test_wide_tables_split_and_repeat_the_key_column():
  row = {"condition": "dsl", **{f"metric_{i}": i for i in range(23)}}
  md = markdown_table([row, {**row, "condition": "rule"}])
  tables = md.strip().split("\n\n")
  assert len(tables) == 3                                    # 1 key + 23 metrics, 10 wide
  for t in tables:
    header = t.splitlines()[0].strip("| ").split(" | ")
    assert header[0] == "condition" and len(header) <= 10
    assert "| rule |" in t
  shown = [c for t in tables for c in t.splitlines()[0].strip("| ").split(" | ")[1:]]
  assert shown == [f"metric_{i}" for i in range(23)]
  two_keys = markdown_table([{"env": "a", "cond": "b", **row}], key=("env", "cond"), max_columns=6)
  assert all(t.startswith("| env | cond |") for t in two_keys.strip().split("\n\n"))
  # By default the leading text columns are the key (here env, regime, condition).
  wide = [{"env": "tw", "regime": r, "condition": "BASE", **{f"pass@{k}": k for k in range(12)}}
          for r in ("list", "no-list")]
  parts = markdown_table(wide).strip().split("\n\n")
  assert len(parts) == 2
  assert all(p.startswith("| env | regime | condition | pass@") for p in parts)


def test_debug_runs_are_labelled(tmp_path):
  write_summary(str(tmp_path / "dbg"), {"n": 1}, [], title="T", debug=True)
  assert (tmp_path / "dbg" / "summary.md").read_text().startswith("# T (debug run)\n")
  assert json.loads((tmp_path / "dbg" / "summary.json").read_text())["debug"] is True
  write_summary(str(tmp_path / "full"), {"n": 1}, [], title="T", debug=False)
  assert (tmp_path / "full" / "summary.md").read_text().startswith("# T\n")
  assert json.loads((tmp_path / "full" / "summary.json").read_text())["debug"] is False
  # Without an explicit flag the run's resolved config (launch.py's config.json) decides.
  (tmp_path / "run").mkdir()
  (tmp_path / "run" / "config.json").write_text('{"debug": true, "seed": 0}')
  write_summary(str(tmp_path / "run"), {"n": 1}, [], title="T")
  assert "(debug run)" in (tmp_path / "run" / "summary.md").read_text()
  write_summary(str(tmp_path / "bare"), {"n": 1}, [], title="T")     # no debug switch at all
  assert "debug" not in json.loads((tmp_path / "bare" / "summary.json").read_text())
