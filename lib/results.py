"""Resumable per-row results and run summaries.

Every experiment appends one JSON object per episode/sample to `<workdir>/results.jsonl`; each row
is flushed and fsync'd so a killed run loses at most the row being written. A rerun into the same
workdir reads the file back and `has()` tells which keys are already done. A torn final line left
by a kill is dropped with a warning and the file is truncated back to its last complete row.
"""
import json
import math
import os
from typing import Any, Iterable, Sequence

from absl import logging

RESULTS = "results.jsonl"


def _key_of(row: dict, fields: Sequence[str]) -> tuple:
  missing = [f for f in fields if f not in row]
  if missing:
    raise KeyError(f"result row lacks key fields {missing}: {sorted(row)}")
  return tuple(json.dumps(row[f], sort_keys=True) for f in fields)


class ResultsLog:
  """Append-only JSONL of result rows, keyed by `key` fields for resumption."""

  def __init__(self, workdir: str, key: Sequence[str], filename: str = RESULTS):
    os.makedirs(workdir, exist_ok=True)
    self.path = os.path.join(workdir, filename)
    self.key = tuple(key)
    self._rows: list[dict] = []
    self._keys: set[tuple] = set()
    self._load()
    self._file = open(self.path, "a", encoding="utf-8")

  def _load(self) -> None:
    if not os.path.exists(self.path):
      return
    with open(self.path, "rb") as f:
      data = f.read()
    good_end = 0
    for line in data.splitlines(keepends=True):
      try:
        if not line.endswith(b"\n"):
          raise ValueError("no newline")
        row = json.loads(line)
      except ValueError:
        logging.warning("dropping truncated/corrupt row at byte %d of %s", good_end, self.path)
        break
      good_end += len(line)
      self._rows.append(row)
      self._keys.add(_key_of(row, self.key))
    if good_end != len(data):
      with open(self.path, "r+b") as f:
        f.truncate(good_end)

  def has(self, row_or_key: dict) -> bool:
    return _key_of(row_or_key, self.key) in self._keys

  def append(self, row: dict) -> None:
    k = _key_of(row, self.key)
    if k in self._keys:
      raise ValueError(f"duplicate result key {dict(zip(self.key, k))}")
    self._file.write(json.dumps(row, sort_keys=True, default=_jsonable) + "\n")
    self._file.flush()
    os.fsync(self._file.fileno())
    self._rows.append(json.loads(json.dumps(row, default=_jsonable)))
    self._keys.add(k)

  def rows(self) -> list[dict]:
    return list(self._rows)

  def __len__(self) -> int:
    return len(self._rows)

  def close(self) -> None:
    self._file.close()

  def __enter__(self) -> "ResultsLog":
    return self

  def __exit__(self, *exc) -> None:
    self.close()


def _jsonable(x: Any) -> Any:
  """JSON fallback for numpy/jax scalars and arrays."""
  if hasattr(x, "tolist"):
    return x.tolist()
  if hasattr(x, "item"):
    return x.item()
  raise TypeError(f"not JSON serialisable: {type(x).__name__}")


def _cell(v: Any) -> str:
  if isinstance(v, float):
    return "nan" if math.isnan(v) else f"{v:.4g}"
  return str(v).replace("|", "\\|")


def markdown_table(table: Iterable[dict]) -> str:
  """Renders rows as a GitHub markdown table; columns in first-seen order."""
  rows = list(table)
  if not rows:
    return "(no rows)\n"
  cols: list[str] = []
  for r in rows:
    cols += [c for c in r if c not in cols]
  lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
  lines += ["| " + " | ".join(_cell(r.get(c, "")) for c in cols) + " |" for r in rows]
  return "\n".join(lines) + "\n"


def write_summary(workdir: str, summary: dict, table: Iterable[dict] = (),
                  title: str = "Summary", notes: str = "") -> str:
  """Writes summary.json and summary.md (title, notes, markdown table); returns the md path."""
  os.makedirs(workdir, exist_ok=True)
  table = list(table)
  with open(os.path.join(workdir, "summary.json"), "w", encoding="utf-8") as f:
    json.dump({"summary": summary, "table": table}, f, indent=2, sort_keys=True,
              default=_jsonable)
  md = f"# {title}\n\n"
  if notes:
    md += notes.strip() + "\n\n"
  md += markdown_table(table)
  path = os.path.join(workdir, "summary.md")
  with open(path, "w", encoding="utf-8") as f:
    f.write(md)
  return path
