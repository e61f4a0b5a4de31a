"""Progress bars for long loops: tqdm on a terminal, silent in logs and CI."""
import sys
from typing import Iterable, TypeVar

from tqdm.auto import tqdm

T = TypeVar("T")


def progress(iterable: Iterable[T] | None = None, **kwargs) -> "tqdm[T]":
  """tqdm with `disable` defaulting to "stderr is not a TTY"."""
  kwargs.setdefault("disable", not sys.stderr.isatty())
  kwargs.setdefault("dynamic_ncols", True)
  return tqdm(iterable, **kwargs)
