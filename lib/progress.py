"""Progress bars for long loops: tqdm on a terminal, silent in logs and CI."""
import sys
from typing import Iterable, TypeVar

from tqdm.auto import tqdm

T = TypeVar("T")


def progress(iterable: Iterable[T] | None = None, **kwargs) -> "tqdm[T]":
  """tqdm with `disable` defaulting to "stderr is not a TTY".

  Args:
    iterable: what to iterate over; None for a manually updated bar (pass total=...).
    **kwargs: tqdm keyword arguments; `disable` defaults to `not sys.stderr.isatty()` and
      `dynamic_ncols` to True.
  Returns:
    the tqdm bar, which iterates like `iterable`.
  """
  kwargs.setdefault("disable", not sys.stderr.isatty())
  kwargs.setdefault("dynamic_ncols", True)
  return tqdm(iterable, **kwargs)
