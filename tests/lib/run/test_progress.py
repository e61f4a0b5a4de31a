"""Progress bars: drawn on a terminal; in logs and CI (stderr not a TTY) a line every 30 s."""
import io
import logging as std_logging
import sys
import time

import pytest

from lib.run import console
from lib.run import progress as progress_lib
from lib.run.progress import progress, show_step


class _Terminal(io.StringIO):
  def isatty(self):
    return True


class _Clock:
  """A fake time.monotonic that the test advances."""

  def __init__(self):
    self.now = 1000.0

  def __call__(self):
    return self.now


@pytest.fixture(name="clock")
def _clock(monkeypatch):
  fake = _Clock()
  monkeypatch.setattr(time, "monotonic", fake)
  return fake


def _run_logged(tmp_path, fn):
  """Runs fn inside a launched run's logging; returns (console lines, log.txt lines)."""
  stream = io.StringIO()
  handler = std_logging.StreamHandler(stream)
  root = std_logging.getLogger()
  root.addHandler(handler)
  try:
    with console.run_logging(str(tmp_path)):
      fn()
  finally:
    root.removeHandler(handler)
  return stream.getvalue().splitlines(), (tmp_path / "log.txt").read_text().splitlines()


def _train(clock, steps=100, seconds_per_step=1.0, **kwargs):
  bar = progress(total=steps, desc="quickstart/sft", **kwargs)
  for _ in range(steps):
    clock.now += seconds_per_step
    show_step(bar, {"loss": 0.41234, "tokens_per_s": 1834.4})
  bar.close()
  return bar


def test_without_a_tty_a_long_loop_logs_a_line_every_30_s_and_a_closing_line(
    monkeypatch, clock, tmp_path):
  monkeypatch.setattr(sys, "stderr", io.StringIO())
  shown, logged = _run_logged(tmp_path, lambda: _train(clock))
  assert shown == [
      "quickstart/sft: 30/100 it (30%), loss 0.4123, tok_s 1834, 1 it/s, ETA 0:01:10",
      "quickstart/sft: 60/100 it (60%), loss 0.4123, tok_s 1834, 1 it/s, ETA 0:00:40",
      "quickstart/sft: 90/100 it (90%), loss 0.4123, tok_s 1834, 1 it/s, ETA 0:00:10",
      "quickstart/sft: 100/100 it (100%), loss 0.4123, tok_s 1834, 1 it/s, done in 0:01:40"]
  assert [l.split(" INFO ", 1)[1] for l in logged if "quickstart/sft" in l] == shown
  assert sys.stderr.getvalue() == ""   # tqdm drew nothing


def test_the_interval_is_a_module_constant(monkeypatch, clock, tmp_path):
  monkeypatch.setattr(sys, "stderr", io.StringIO())
  monkeypatch.setattr(progress_lib, "INTERVAL_S", 10.0)
  shown, _ = _run_logged(tmp_path, lambda: _train(clock))
  assert len(shown) == 11 and shown[0].startswith("quickstart/sft: 10/100 it (10%)")


def test_a_terminal_keeps_the_tqdm_bar_and_logs_no_lines(monkeypatch, clock, tmp_path):
  terminal = _Terminal()
  monkeypatch.setattr(sys, "stderr", terminal)
  shown, _ = _run_logged(tmp_path, lambda: _train(clock, file=terminal, ncols=100))
  assert shown == [] and "quickstart/sft: 100%" in terminal.getvalue()
  monkeypatch.setattr(sys, "stderr", io.StringIO())   # the same loop without a terminal
  shown, _ = _run_logged(tmp_path, lambda: _train(clock))
  assert len(shown) == 4


def test_short_loops_log_only_their_closing_line_and_very_short_ones_nothing(
    monkeypatch, clock, tmp_path):
  monkeypatch.setattr(sys, "stderr", io.StringIO())

  def loops():
    for _ in progress(range(5), desc="tasks", unit="episode"):
      clock.now += 2.0
    for _ in range(50):   # many bars of a second each: no line
      _train(clock, steps=4, seconds_per_step=0.25)
    _train(clock, steps=3, seconds_per_step=60.0, disable=True)   # an explicit disable holds
  shown, _ = _run_logged(tmp_path, loops)
  assert shown == ["tasks: 5/5 episodes (100%), 0.5 episode/s, done in 0:00:10"]


def test_bar_draws_on_a_terminal(monkeypatch):
  terminal = _Terminal()
  monkeypatch.setattr(sys, "stderr", terminal)
  bar = progress(total=4, desc="episodes", file=terminal, ncols=80)
  assert not bar.disable
  bar.update(4)
  bar.close()
  assert "episodes: 100%" in terminal.getvalue() and "4/4" in terminal.getvalue()


def test_training_bar_shows_loss_and_tokens_per_s_on_a_terminal(monkeypatch):
  terminal = _Terminal()
  monkeypatch.setattr(sys, "stderr", terminal)
  bar = progress(total=10, initial=4, desc="grpo", file=terminal, ncols=100)
  show_step(bar, {"loss": 0.123456, "tokens_per_s": 1234.5, "reward_mean": 1.0})
  bar.close()
  out = terminal.getvalue()
  assert "grpo:" in out and "5/10" in out and "loss=0.1235" in out and "tok_s=1234" in out


def test_a_loop_stopped_early_says_so_and_a_bar_without_total_counts(monkeypatch, clock, tmp_path):
  monkeypatch.setattr(sys, "stderr", io.StringIO())

  def loops():
    bar = progress(total=400, initial=100, desc="grpo", unit="it")
    clock.now += 40.0
    bar.update(20)
    bar.set_postfix(loss=0.5)
    clock.now += 10.0
    bar.update(10)
    bar.close()
    bar = progress(desc="rows")
    clock.now += 6.0
    bar.update(3)
    bar.close()
  shown, _ = _run_logged(tmp_path, loops)
  assert shown == ["grpo: 120/400 it (30%), 0.5 it/s, ETA 0:09:20",
                   "grpo: 130/400 it (32%), loss 0.5, 0.6 it/s, stopped after 0:00:50",
                   "rows: 3 it, 0.5 it/s, done in 0:00:06"]
