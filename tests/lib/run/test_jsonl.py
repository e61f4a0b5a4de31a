"""Whole JSONL files (lib/run/jsonl.py): strict JSON, atomic replacement, read back."""
import math
import os

import pytest

from lib.run.jsonl import read_jsonl, write_jsonl

ROWS = [{"b": 1, "a": "x"}, {"a": "é", "list": [1, 2.5, None]}]


def test_round_trip_count_key_order_and_new_folder(tmp_path):
  path = str(tmp_path / "new" / "rows.jsonl")
  assert write_jsonl(path, ROWS) == 2
  assert read_jsonl(path) == ROWS
  with open(path, encoding="utf-8") as f:
    assert f.readline() == '{"b": 1, "a": "x"}\n'
  assert write_jsonl(path, iter(ROWS), sort_keys=True) == 2
  with open(path, encoding="utf-8") as f:
    assert f.read() == '{"a": "x", "b": 1}\n{"a": "\\u00e9", "list": [1, 2.5, null]}\n'
  assert os.listdir(tmp_path / "new") == ["rows.jsonl"]    # no temporary file left behind


@pytest.mark.parametrize("bad,error", [
    ({"x": object()}, TypeError),          # not JSON-serialisable
    ({"loss": math.nan}, ValueError),      # NaN is not strict JSON
    ({"loss": -math.inf}, ValueError),
])
def test_a_bad_row_raises_and_leaves_the_previous_file_intact(tmp_path, bad, error):
  path = str(tmp_path / "rows.jsonl")
  write_jsonl(path, ROWS)
  with open(path, "rb") as f:
    before = f.read()
  with pytest.raises(error):
    write_jsonl(path, [{"a": 1}, {"a": 2}, bad, {"a": 3}])
  with open(path, "rb") as f:
    assert f.read() == before
  assert os.listdir(tmp_path) == ["rows.jsonl"]


def test_an_interrupted_row_stream_leaves_the_previous_file_intact(tmp_path):
  path = str(tmp_path / "rows.jsonl")
  write_jsonl(path, ROWS)

  def rows():
    yield {"a": 1}
    raise KeyboardInterrupt       # a kill while rows are still being produced

  with pytest.raises(KeyboardInterrupt):
    write_jsonl(path, rows())
  assert read_jsonl(path) == ROWS and os.listdir(tmp_path) == ["rows.jsonl"]


def test_read_skips_blank_lines_and_rejects_bad_ones(tmp_path):
  path = tmp_path / "rows.jsonl"
  path.write_text('{"a": 1}\n\n{"a": 2}\n', encoding="utf-8")
  assert read_jsonl(str(path)) == [{"a": 1}, {"a": 2}]
  path.write_text('{"a": 1}\n{"a": \n', encoding="utf-8")
  with pytest.raises(ValueError):
    read_jsonl(str(path))
  with pytest.raises(FileNotFoundError):
    read_jsonl(str(tmp_path / "missing.jsonl"))
