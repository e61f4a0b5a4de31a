"""Progress bars: drawn on a terminal, silent in logs and CI (stderr not a TTY)."""
import io
import sys

from lib.run.progress import progress, show_step


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


def test_training_bar_shows_loss_and_tokens_per_s_on_a_terminal(monkeypatch):
  terminal = _Terminal()
  monkeypatch.setattr(sys, "stderr", terminal)
  bar = progress(total=10, initial=4, desc="grpo", file=terminal, ncols=100)
  show_step(bar, {"loss": 0.123456, "tokens_per_s": 1234.5, "reward_mean": 1.0})
  bar.close()
  out = terminal.getvalue()
  assert "grpo:" in out and "5/10" in out and "loss=0.1235" in out and "tok_s=1234" in out


def test_training_bar_is_silent_without_a_tty(monkeypatch):
  monkeypatch.setattr(sys, "stderr", io.StringIO())
  bar = progress(total=2, desc="opsd")
  show_step(bar, {"loss": 1.0})
  bar.close()
  assert bar.disable and sys.stderr.getvalue() == ""
