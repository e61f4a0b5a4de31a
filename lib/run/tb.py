"""One TensorBoard writer per run directory.

`launch.py` opens the writer for a run; experiment code asks for the same object with
`tb.writer(workdir)` rather than opening a second event file in the same directory.
"""
import os

from tensorboardX import SummaryWriter

_WRITERS: dict[str, SummaryWriter] = {}


def writer(workdir: str) -> SummaryWriter:
  """Returns the run's SummaryWriter (events under `<workdir>/tb`), creating it once.

  Args:
    workdir: the run directory; equal absolute paths share one writer.
  Returns:
    tensorboardX SummaryWriter.
  """
  path = os.path.abspath(workdir)
  if path not in _WRITERS:
    _WRITERS[path] = SummaryWriter(logdir=os.path.join(path, "tb"))
  return _WRITERS[path]


def close(workdir: str) -> None:
  """Closes and forgets the run's writer; a no-op when none is open.

  Args:
    workdir: the run directory given to `writer`.
  """
  w = _WRITERS.pop(os.path.abspath(workdir), None)
  if w is not None:
    w.close()


def scalars(workdir: str, step: int, values: dict, prefix: str = "") -> None:
  """Writes every numeric entry of `values` as a scalar at `step` and flushes (trainers call it at
  each logged step, so TensorBoard shows a live run).

  Args:
    workdir: the run directory (its writer is created if needed).
    step: global step of the scalars.
    values: name -> value; entries that float() rejects are skipped.
    prefix: prepended to every name, e.g. "train/".
  """
  w = writer(workdir)
  for name, value in values.items():
    try:
      w.add_scalar(f"{prefix}{name}", float(value), step)
    except (TypeError, ValueError):
      continue
  w.flush()
