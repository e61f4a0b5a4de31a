"""Progress bars for long loops: tqdm on a terminal, one line every 30 s in logs and CI.

Without a terminal (stderr not a TTY: CI, `nohup`, a pipe) no bar can be drawn, so `progress`
returns a bar that logs one short line at most every `INTERVAL_S` seconds instead,

  quickstart/sft: 120/400 it (30%), loss 0.4123, tok_s 1834, 12.3 it/s, ETA 0:00:23

and one closing line when the loop ends. The lines are absl INFO records marked for the console
(`console.ON_CONSOLE`), so a launched run shows them on the console and writes them to log.txt.
"""
import datetime
import sys
import time
from collections import OrderedDict
from numbers import Number
from typing import Iterable, TypeVar

from absl import logging
from tqdm.auto import tqdm

from lib.run import console

T = TypeVar("T")

# At most one line per bar this often; the issue was 8 silent minutes in a CI log.
INTERVAL_S = 30.0
# A bar that ends sooner than this without having printed a line stays silent: many short loops
# (one bar per condition, per batch) would otherwise fill the log with a line each.
CLOSING_MIN_S = 5.0


def _duration(seconds: float) -> str:
  """H:MM:SS of a duration in seconds."""
  return str(datetime.timedelta(seconds=round(max(seconds, 0.0))))


def _rate(per_s: float) -> str:
  """A rate with three significant digits (0.0523, 12.3, 1834)."""
  return f"{per_s:.3g}" if per_s < 1000 else f"{per_s:.0f}"


class LineBar(tqdm):
  """A tqdm that draws nothing and logs a line per `INTERVAL_S` and one when it closes.

  It is a disabled tqdm (so tqdm writes nothing) that counts `update`s and iterations itself
  and keeps `desc` and the `set_postfix` values for its lines. Lines come from `update`, so a
  loop that stalls between two updates is silent until the next one.
  """

  def __init__(self, iterable=None, desc=None, total=None, unit="it", initial=0, postfix=None,
               **kwargs):
    kwargs["disable"] = True
    super().__init__(iterable, desc=desc, total=total, unit=unit, initial=initial, **kwargs)
    self.desc, self.unit, self.initial = desc or "", unit, initial
    self.postfix, self.shown = "", ""
    self.start_t = self.last_print_t = time.monotonic()
    self.last_print_n, self.lines, self.closed = initial, 0, False
    if isinstance(postfix, dict):
      self.set_postfix(postfix)

  def __iter__(self):
    """Yields the iterable's items, counting each; closes the bar when they end."""
    try:
      for obj in self.iterable:
        yield obj
        self.update(1)
    finally:
      self.close()

  def update(self, n=1):
    """Counts `n` more done; logs a line when `INTERVAL_S` passed since the last one."""
    self.n += n
    now = time.monotonic()
    if self.closed or now - self.last_print_t < INTERVAL_S:
      return
    window = self.n - self.last_print_n, now - self.last_print_t
    self._log(now, per_s=window[0] / window[1])
    self.last_print_t, self.last_print_n = now, self.n

  def set_postfix(self, ordered_dict=None, refresh=True, **kwargs):
    """Values shown after the counts (`loss 0.4123, tok_s 1834`), formatted as tqdm does."""
    del refresh
    shown = OrderedDict([] if ordered_dict is None else ordered_dict)
    for key in sorted(kwargs):
      shown[key] = kwargs[key]
    for key, value in shown.items():
      shown[key] = self.format_num(value) if isinstance(value, Number) else str(value).strip()
    self.postfix = ", ".join(f"{k}={v}" for k, v in shown.items())
    self.shown = ", ".join(f"{k} {v}" for k, v in shown.items())

  def set_postfix_str(self, s="", refresh=True):
    """Text shown after the counts instead of `set_postfix` values."""
    del refresh
    self.postfix = self.shown = str(s)

  def set_description(self, desc=None, refresh=True):
    """The text that starts each line (`quickstart/sft`)."""
    del refresh
    self.desc = desc or ""

  def close(self):
    """Logs the final state, if the bar printed a line or ran `CLOSING_MIN_S`; then no more."""
    if getattr(self, "closed", True):
      return
    self.closed = True
    now = time.monotonic()
    elapsed = now - self.start_t
    if self.lines or elapsed >= CLOSING_MIN_S:
      self._log(now, per_s=(self.n - self.initial) / max(elapsed, 1e-9), closing=True)

  def __del__(self):
    # Garbage collection (possibly at interpreter exit, logging torn down) logs nothing.
    self.closed = True

  def line(self, per_s: float, elapsed: float, closing: bool = False) -> str:
    """The text of one line.

    Args:
      per_s: units per second to show (and to take the ETA from).
      elapsed: seconds since the bar started.
      closing: the closing line: it says how long the loop took instead of an ETA.
    Returns:
      `desc: n/total unit (pct%), postfix values, rate unit/s, ETA H:MM:SS` (parts that are
      unknown left out).
    """
    units = self.unit if self.unit == "it" or self.unit.endswith("s") else self.unit + "s"
    if self.total:
      parts = [f"{self.n}/{self.total} {units} ({100 * self.n // self.total}%)"]
    else:
      parts = [f"{self.n} {units}"]
    if self.shown:
      parts.append(self.shown)
    if per_s > 0:
      parts.append(f"{_rate(per_s)} {self.unit}/s")
    if closing:
      done = not self.total or self.n >= self.total
      parts.append(f"{'done in' if done else 'stopped after'} {_duration(elapsed)}")
    elif self.total and per_s > 0:
      parts.append(f"ETA {_duration((self.total - self.n) / per_s)}")
    return (f"{self.desc}: " if self.desc else "") + ", ".join(parts)

  def _log(self, now: float, per_s: float, closing: bool = False) -> None:
    self.lines += 1
    logging.info("%s", self.line(per_s, now - self.start_t, closing), extra=console.ON_CONSOLE)


def progress(iterable: Iterable[T] | None = None, **kwargs) -> "tqdm[T]":
  """tqdm on a terminal; without one (stderr not a TTY) a `LineBar` logging a line per 30 s.

  Args:
    iterable: what to iterate over; None for a manually updated bar (pass total=...).
    **kwargs: tqdm keyword arguments; `dynamic_ncols` defaults to True. An explicit `disable`
      is tqdm's: True shows nothing at all, False draws the bar even without a terminal.
  Returns:
    the bar, which iterates like `iterable`.
  """
  if "disable" not in kwargs and not sys.stderr.isatty():
    return LineBar(iterable, **kwargs)
  kwargs.setdefault("dynamic_ncols", True)
  return tqdm(iterable, **kwargs)


def show_step(bar: "tqdm", metrics: dict) -> None:
  """Advances a training bar by one step and shows that step's loss and tokens/s.

  Args:
    bar: a bar from `progress(total=steps, initial=start, ...)`, which shows the ETA.
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
