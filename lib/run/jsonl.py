"""Whole JSONL files written atomically in strict JSON, and read back.

`write_jsonl(path, rows)` writes one JSON object a line to a temporary file in the same folder,
fsyncs it and renames it over `path` (os.replace, atomic on one file system), so a kill, a full
disk or a row that is not JSON-serialisable leaves the previous file exactly as it was, and a
reader never sees half a file. NaN and infinities are refused (allow_nan=False): Python would
write them as bare `NaN`, which strict JSON readers reject. `read_jsonl` reads such a file back.

Data sets, supervision rows and samples go through these; the row-by-row log of a running
experiment is `lib.run.results.ResultsLog`.
"""
import contextlib
import json
import os
from typing import IO, Iterable, Iterator


@contextlib.contextmanager
def atomic_file(path: str, mode: str = "w") -> Iterator[IO]:
  """A file that replaces `path` when the block ends without error, and is dropped otherwise.

  It is written in the same folder (so os.replace is a rename on one file system), flushed and
  fsynced, renamed over `path`, and the folder is fsynced to make the rename durable. The pid in
  the temporary name keeps two processes writing one path from sharing a temporary file.

  Args:
    path: the file to replace (its folder is created if missing).
    mode: "w" (text, UTF-8) or "wb".
  Yields:
    The open temporary file.
  """
  folder = os.path.dirname(os.path.abspath(path))
  os.makedirs(folder, exist_ok=True)
  tmp = f"{path}.tmp{os.getpid()}"
  try:
    with open(tmp, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as f:
      yield f
      f.flush()
      os.fsync(f.fileno())
    os.replace(tmp, path)
  except BaseException:
    if os.path.exists(tmp):
      os.remove(tmp)
    raise
  directory = os.open(folder, os.O_RDONLY)
  try:
    os.fsync(directory)
  finally:
    os.close(directory)


def write_jsonl(path: str, rows: Iterable[dict], sort_keys: bool = False) -> int:
  """Replaces `path` by the rows, one JSON object a line, or leaves it untouched on any error.

  Args:
    path: the file (its folder is created if missing).
    rows: JSON-serialisable rows (plain Python values; NaN/inf raise ValueError, other objects
      TypeError).
    sort_keys: write each row's keys sorted.
  Returns:
    The number of rows written.
  """
  n = 0
  with atomic_file(path) as f:
    for row in rows:
      f.write(json.dumps(row, sort_keys=sort_keys, allow_nan=False) + "\n")
      n += 1
  return n


def read_jsonl(path: str, what: str = "") -> list:
  """The rows of a JSONL file (blank lines skipped).

  Args:
    path: the file (FileNotFoundError if missing, naming `what` when given; a line that is not
      JSON raises ValueError).
    what: what the file is, for the missing-file message (e.g. "source results").
  Returns:
    The parsed rows, in file order.
  """
  if what and not os.path.isfile(path):
    raise FileNotFoundError(f"{what}: {path!r} does not exist")
  with open(path, encoding="utf-8") as f:
    return [json.loads(line) for line in f if line.strip()]
