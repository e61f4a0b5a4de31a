"""The launched run's console: INFO lines to log.txt only (unless verbose), and a closing report of
the summary table and the figure paths."""
import io
import logging as std_logging

from absl import logging

from lib.run import console


def _with_console_handler(fn):
  stream = io.StringIO()
  handler = std_logging.StreamHandler(stream)
  root = std_logging.getLogger()
  root.addHandler(handler)
  try:
    fn()
  finally:
    root.removeHandler(handler)
  return stream.getvalue()


def test_info_goes_to_log_txt_only_and_warnings_to_both(tmp_path):
  def log():
    with console.run_logging(str(tmp_path)):
      logging.info("step 10: loss 0.5")
      logging.warning("resumed from an older checkpoint")
  shown = _with_console_handler(log)
  assert "loss 0.5" not in shown and "older checkpoint" in shown
  text = (tmp_path / "log.txt").read_text()
  assert "INFO step 10: loss 0.5" in text and "WARNING resumed" in text
  # Leaving the context removes the filters: later INFO lines reach the console again.
  assert "after" in _with_console_handler(lambda: logging.info("after"))


def test_lines_marked_on_console_reach_the_console_and_log_txt(tmp_path):
  def log():
    with console.run_logging(str(tmp_path)):
      logging.info("sft: 30/100 it (30%)", extra=console.ON_CONSOLE)
      logging.info("step 10: loss 0.5")
  assert _with_console_handler(log).splitlines() == ["sft: 30/100 it (30%)"]
  assert "INFO sft: 30/100 it (30%)" in (tmp_path / "log.txt").read_text()


def test_matplotlib_font_cache_lines_stay_off_a_default_console(monkeypatch, tmp_path):
  monkeypatch.setattr(console.os, "environ", dict(console.os.environ))  # it sets variables
  names = [console._BACKEND_PROBE_LOGGER, "matplotlib", "matplotlib.font_manager"]
  for name in names:   # levels are process-wide: put them back afterwards
    monkeypatch.setattr(std_logging.getLogger(name), "level", std_logging.NOTSET)
  fonts = std_logging.getLogger("matplotlib.font_manager")

  def log():
    with console.run_logging(str(tmp_path)):
      fonts.warning("Matplotlib is building the font cache; this may take a moment.")
      fonts.info("generated new fontManager")   # absl has set the root logger to INFO
      fonts.error("a real font error")
  root = std_logging.getLogger()
  monkeypatch.setattr(root, "level", std_logging.INFO)
  console.quiet_import_banners(["launch.py", "--verbose"])
  assert "font cache" in _with_console_handler(log)
  console.quiet_import_banners(["launch.py"])
  shown = _with_console_handler(log)
  assert "font" not in shown.replace("a real font error", "") and "a real font error" in shown


def test_verbose_keeps_info_on_the_console(tmp_path):
  def log():
    with console.run_logging(str(tmp_path), verbose=True):
      logging.info("step 10: loss 0.5")
  assert "loss 0.5" in _with_console_handler(log)


def test_summary_report_ends_with_the_table_and_figure_paths(tmp_path):
  (tmp_path / "summary.md").write_text(
      "# Title\n\nnotes\n\n\n![a.png](a.png)\n\n| x | y |\n|---|---|\n| 1 | 2 |\n\n")
  (tmp_path / "b.png").write_bytes(b"")
  (tmp_path / "a.png").write_bytes(b"")
  lines = console.summary_report(str(tmp_path)).splitlines()
  assert lines[:7] == ["# Title", "", "notes", "", "| x | y |", "|---|---|", "| 1 | 2 |"]
  assert lines[7:] == ["", "figures:", f"  {tmp_path / 'a.png'}", f"  {tmp_path / 'b.png'}"]


def test_summary_report_is_capped_and_empty_without_outputs(tmp_path):
  assert console.summary_report(str(tmp_path)) == ""
  (tmp_path / "summary.md").write_text("".join(f"| {i} |\n" for i in range(100)))
  lines = console.summary_report(str(tmp_path), max_lines=10).splitlines()
  assert len(lines) == 11 and lines[-1].startswith("... (90 more lines in ")
