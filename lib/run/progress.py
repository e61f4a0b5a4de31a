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


def show_step(bar: "tqdm", metrics: dict) -> None:
  """Advances a training bar by one step and shows that step's loss and tokens/s.

  Args:
    bar: a bar from `progress(total=steps, initial=start, ...)`; its ETA comes from tqdm.
    metrics: the step's host metrics; `loss` and `tokens_per_s` are shown when present.
  Returns:
    None.
  """
  shown = {}
  if "loss" in metrics:
    shown["loss"] = f"{float(metrics['loss']):.4f}"
  if "tokens_per_s" in metrics:
    shown["tok_s"] = f"{float(metrics['tokens_per_s']):.0f}"
  bar.set_postfix(shown, refresh=False)
  bar.update(1)
