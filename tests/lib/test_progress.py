"""Progress bars: drawn on a terminal, silent in logs and CI (stderr not a TTY)."""
import io
import sys

from lib.progress import progress


class _Terminal(io.StringIO):
  def isatty(self):
    return True


def test_bar_is_silent_when_stderr_is_not_a_tty(monkeypatch):
  monkeypatch.setattr(sys, "stderr", io.StringIO())
  bar = progress(range(3), desc="episodes")
  assert bar.disable and list(bar) == [0, 1, 2]
  assert sys.stderr.getvalue() == ""


def test_bar_draws_on_a_terminal(monkeypatch):
  terminal = _Terminal()
  monkeypatch.setattr(sys, "stderr", terminal)
  bar = progress(total=4, desc="episodes", file=terminal, ncols=80)
  assert not bar.disable
  bar.update(4)
  bar.close()
  assert "episodes: 100%" in terminal.getvalue() and "4/4" in terminal.getvalue()
