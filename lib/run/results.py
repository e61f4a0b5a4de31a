"""Resumable per-row results and run summaries.

Every experiment appends one JSON object per episode/sample to `<workdir>/results.jsonl`; each row
is flushed and fsync'd so a killed run loses at most the row being written. A rerun into the same
workdir reads the file back and `has()` tells which keys are already done.

Damage never costs valid rows: a torn final line left by a kill (no trailing newline) is dropped
with a warning; a bad line anywhere else (not JSON, not a JSON object, or lacking a key field) is
moved with its line number to `results.rejected.jsonl` beside the file, and the file is rewritten
atomically (temporary file, fsync, rename) with every valid row in its original order.

Summaries: `write_summary` writes `summary.json` as strict JSON (NaN/inf -> null, numpy values
made plain; `"debug": true/false` when the run has a debug switch) and `summary.md`, whose title
says "(debug run)" for debug runs; `markdown_table` prints `–` for empty/None/NaN cells and splits
tables wider than ten columns into several that repeat the key column(s).
"""
import json
import math
import os
from typing import Any, Iterable, Sequence

from absl import logging

from lib.run.jsonl import atomic_file

RESULTS = "results.jsonl"


def _key_of(row: dict, fields: Sequence[str]) -> tuple:
  missing = [f for f in fields if f not in row]
  if missing:
    raise KeyError(f"result row lacks key fields {missing}: {sorted(row)}")
  return tuple(json.dumps(row[f], sort_keys=True) for f in fields)


class ResultsLog:
  """Append-only JSONL of result rows, keyed by `key` fields for resumption.

  Args:
    workdir: the run directory (created if missing); the log is `<workdir>/<filename>`.
    key: the row fields that identify a row; `has()` and duplicate checks compare them.
    filename: the JSONL file name; bad lines go to `<stem>.rejected.jsonl` beside it.
  """

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
    lines = data.splitlines(keepends=True)
    kept: list[bytes] = []
    rejected: list[dict] = []
    torn = bool(lines) and not lines[-1].endswith(b"\n")
    for number, line in enumerate(lines[:-1] if torn else lines, start=1):
      row, reason = self._parse_row(line)
      if reason is not None:
        rejected.append({"line": number, "reason": reason,
                         "text": line.decode("utf-8", errors="replace").rstrip("\n")})
        continue
      kept.append(line)
      self._rows.append(row)
      self._keys.add(_key_of(row, self.key))
    if torn:
      logging.warning("%s: dropping the torn last line %d (a killed run's partial row)",
                      self.path, len(lines))
    if rejected:
      self._reject(rejected)
    if rejected or torn:
      with atomic_file(self.path, "wb") as f:   # a crash leaves the old or the new file
        f.write(b"".join(kept))

  def _parse_row(self, line: bytes) -> tuple[dict | None, str | None]:
    """Returns (row, None) for a valid row, else (None, why it is not one)."""
    try:
      row = json.loads(line)
    except ValueError as e:  # includes UnicodeDecodeError
      return None, f"not JSON: {e}"
    if not isinstance(row, dict):
      return None, f"not a JSON object: {type(row).__name__}"
    missing = [f for f in self.key if f not in row]
    if missing:
      return None, f"lacks key fields {missing}"
    return row, None

  def _reject(self, rejected: list[dict]) -> None:
    """Appends bad lines to the rejected file (fsync'd before the results file is rewritten)."""
    root, ext = os.path.splitext(self.path)
    rejected_path = f"{root}.rejected{ext}"
    with open(rejected_path, "a", encoding="utf-8") as f:
      for entry in rejected:
        f.write(json.dumps(entry, sort_keys=True) + "\n")
      f.flush()
      os.fsync(f.fileno())
    numbers = ", ".join(str(e["line"]) for e in rejected[:10])
    more = f" and {len(rejected) - 10} more" if len(rejected) > 10 else ""
    logging.warning("%s: moved %d bad line(s) (line %s%s) to %s; kept %d valid rows",
                    self.path, len(rejected), numbers, more, rejected_path, len(self._rows))

  def has(self, row_or_key: dict) -> bool:
    """Whether a row with the same key is already logged.

    Args:
      row_or_key: a row, or a dict holding at least the key fields (a missing one raises
        KeyError).
    Returns:
      True if that key is in the log.
    """
    return _key_of(row_or_key, self.key) in self._keys

  def append(self, row: dict) -> None:
    """Writes one row as a JSON line, flushed and fsync'd before returning.

    Args:
      row: a JSON-able dict (numpy/jax values become lists/scalars) with every key field;
        a key already logged raises ValueError.
    """
    k = _key_of(row, self.key)
    if k in self._keys:
      raise ValueError(f"duplicate result key {dict(zip(self.key, k))}")
    self._file.write(json.dumps(row, sort_keys=True, default=_jsonable) + "\n")
    self._file.flush()
    os.fsync(self._file.fileno())
    self._rows.append(json.loads(json.dumps(row, default=_jsonable)))
    self._keys.add(k)

  def rows(self) -> list[dict]:
    """A copy of the list of valid rows, in file order (each as read back from JSON)."""
    return list(self._rows)

  def __len__(self) -> int:
    return len(self._rows)

  def close(self) -> None:
    """Closes the underlying file."""
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


def strict_json(x: Any) -> Any:
  """`x` with NaN/inf floats replaced by None and numpy/jax values made plain Python, recursively.

  Args:
    x: a JSON-like value (dicts, lists, tuples, scalars, numpy/jax scalars and arrays).
  Returns:
    The same structure, serialisable with `json.dumps(..., allow_nan=False)`; tuples become
    lists and dict keys strings.
  """
  if isinstance(x, dict):
    return {str(k): strict_json(v) for k, v in x.items()}
  if isinstance(x, (list, tuple)):
    return [strict_json(v) for v in x]
  if isinstance(x, (str, bool, int)) or x is None:
    return x
  if isinstance(x, float):
    return x if math.isfinite(x) else None
  return strict_json(_jsonable(x))   # numpy/jax scalar or array -> Python, then recurse


EMPTY_CELL = "–"


def _cell(v: Any) -> str:
  if hasattr(v, "item") and not isinstance(v, (str, bytes)):
    v = v.item() if getattr(v, "ndim", 0) == 0 else v
  if v is None or (isinstance(v, str) and v.strip() in ("", "-")):
    return EMPTY_CELL
  if isinstance(v, bool):
    return str(v)
  if isinstance(v, float):
    if math.isnan(v):
      return EMPTY_CELL
    return f"{v:.4g}" if math.isfinite(v) else ("∞" if v > 0 else "-∞")
  if isinstance(v, (list, tuple)) and v and all(
      isinstance(x, (int, float)) and not isinstance(x, bool) for x in v):
    return "[" + ", ".join(_cell(x) for x in v) + "]"    # an interval: [lo, hi], each like a cell
  return str(v).replace("|", "\\|").replace("\n", " ")


def markdown_table(table: Iterable[dict], key: Sequence[str] | None = None,
                   max_columns: int = 10) -> str:
  """Renders rows as GitHub markdown tables a person can read on one screen.

  Columns come in first-seen order. Empty, None and NaN cells print as `–`. A table with more
  than `max_columns` columns is split into several tables of at most `max_columns` columns that
  each repeat the key column(s), so every row can still be told apart.

  Args:
    table: the rows (dicts); a missing field is an empty cell.
    key: the columns that identify a row, repeated in every part of a split table; default the
      first column and the text-valued columns right after it (at most half the width).
    max_columns: the widest table printed, key columns included.
  Returns:
    The markdown text (tables separated by a blank line), or "(no rows)\\n".
  """
  rows = list(table)
  if not rows:
    return "(no rows)\n"
  cols: list[str] = []
  for r in rows:
    cols += [c for c in r if c not in cols]
  if key is None:   # the leading text columns (names, conditions) identify a row
    key = cols[:1]
    for c in cols[1:max_columns // 2]:
      if not all(isinstance(r.get(c), str) for r in rows):
        break
      key.append(c)
  key_cols = [c for c in key if c in cols]
  rest = [c for c in cols if c not in key_cols]
  width = max(1, max_columns - len(key_cols))
  parts = [rest[i:i + width] for i in range(0, len(rest), width)] or [[]]
  blocks = []
  for part in parts:
    shown = key_cols + part
    lines = ["| " + " | ".join(_cell(c) for c in shown) + " |", "|" + "---|" * len(shown)]
    lines += ["| " + " | ".join(_cell(r.get(c)) for c in shown) + " |" for r in rows]
    blocks.append("\n".join(lines) + "\n")
  return "\n".join(blocks)


def _debug_of_run(workdir: str) -> bool | None:
  """The `debug` field of the run's resolved config (`<workdir>/config.json`), if it has one."""
  try:
    with open(os.path.join(workdir, "config.json"), encoding="utf-8") as f:
      debug = json.load(f).get("debug")
  except (OSError, ValueError, AttributeError):
    return None
  return debug if isinstance(debug, bool) else None


def write_summary(workdir: str, summary: dict, table: Iterable[dict] = (),
                  title: str = "Summary", notes: str = "", debug: bool | None = None,
                  key: Sequence[str] | None = None) -> str:
  """Writes summary.json (strict JSON) and summary.md (title, notes, markdown table).

  Args:
    workdir: the run directory.
    summary: the run's headline numbers; NaN/inf are written as null.
    table: the main table's rows (summary.json "table", and the table of summary.md).
    title: summary.md's heading; " (debug run)" is appended for a debug run.
    notes: markdown between the title and the table.
    debug: whether the run used its config's debug switch; None reads the `debug` field of
      `<workdir>/config.json` (launch.py writes it), and leaves the run unlabelled without one.
    key: the table's key columns for `markdown_table`.
  Returns:
    The path of summary.md.
  """
  os.makedirs(workdir, exist_ok=True)
  table = list(table)
  if debug is None:
    debug = _debug_of_run(workdir)
  payload = {"summary": summary, "table": table}
  if debug is not None:
    payload["debug"] = bool(debug)
  with open(os.path.join(workdir, "summary.json"), "w", encoding="utf-8") as f:
    json.dump(strict_json(payload), f, indent=2, sort_keys=True, allow_nan=False)
  md = f"# {title}{' (debug run)' if debug else ''}\n\n"
  if debug:
    md += ("_Debug run: the config's `debug` switch shrinks data, training and evaluation; the "
           "numbers check the mechanics, not the method._\n\n")
  if notes:
    md += notes.strip() + "\n\n"
  md += markdown_table(table, key=key)
  path = os.path.join(workdir, "summary.md")
  with open(path, "w", encoding="utf-8") as f:
    f.write(md)
  return path
