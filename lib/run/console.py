"""What a launched run shows on the console and writes to its log file.

By default the console gets warnings, errors, the progress bars (`lib.run.progress`: drawn on a
terminal; without one, a line every 30 s, which log.txt gets too) and, at the end, the run's
summary table with the paths of its figures (`summary_report`); the run's own INFO lines go to
<workdir>/log.txt only, and other libraries' INFO lines (orbax's checkpoint internals, hundreds per
run) nowhere. `verbose=True` sends everything everywhere.
"""
import contextlib
import glob
import importlib.util
import logging as std_logging
import os
import sysconfig
from typing import Iterator

from absl import logging

# Installed third-party code; INFO records from files under these are library internals.
_LIBRARY_DIRS = tuple({os.path.realpath(sysconfig.get_paths()[k]) for k in ("purelib", "platlib")})


# JAX logs one INFO line for every platform it probes and cannot open ("Unable to initialize
# backend 'tpu': ... libtpu.so"), on every machine without that accelerator.
_BACKEND_PROBE_LOGGER = "jax._src.xla_bridge"
# Matplotlib logs "generated new fontManager" (INFO, after absl has set the root logger to INFO and
# before run_logging filters the console) and, when that takes over 5 s, a WARNING that it is
# building the font cache; its font_manager also warns of each missing font family it replaces.
_QUIETED_LOGGERS = {"matplotlib": std_logging.WARNING, "matplotlib.font_manager": std_logging.ERROR}

# `logging.info(..., extra=ON_CONSOLE)`: an INFO line for the console as well as log.txt (the
# progress lines of a run without a terminal, lib/run/progress.py).
ON_CONSOLE = {"on_console": True}


def _on_tpu_host() -> bool:
  """Whether this machine has TPU chips attached (Google's PCI vendor id, as JAX checks)."""
  for path in glob.glob("/sys/bus/pci/devices/*/vendor"):
    try:
      with open(path, encoding="utf-8") as f:
        if f.read().strip() == "0x1ae0":
          return True
    except OSError:
      continue
  return False


def quiet_libtpu_off_tpu_host() -> None:
  """Lets libtpu load quietly and more than once on a machine without TPU chips.

  With libtpu installed (the `[tpu]` extra, which `[test]` includes), every JAX process probes the
  TPU plugin, and on a machine without chips libtpu prints two multi-line warnings (it cannot find
  the accelerator type or the worker host names) and takes a machine-wide lock file, so a second
  process (a parallel test worker, two `--plan` commands) fails to load it. Naming a placeholder
  type and host ends the warnings (the probe still finds no chips, and topology compiles name
  their own slice), and with no chips to guard the lock is lifted. On a TPU host the real values
  come from the host's metadata and the lock protects the chips, so nothing is set there; values
  already in the environment are kept. Call it before JAX initialises its backends.
  """
  if importlib.util.find_spec("libtpu") is None or _on_tpu_host():
    return
  os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")
  os.environ.setdefault("TPU_ACCELERATOR_TYPE", "v5litepod-1")
  os.environ.setdefault("TPU_WORKER_HOSTNAMES", "localhost")


def verbose_requested(argv: list[str]) -> bool:
  """Whether the command line turns absl's `--verbose` flag on (`--verbose`, `--verbose=true`).

  Args:
    argv: sys.argv.
  Returns:
    True for `--verbose`, `--verbose=true/1/yes`; False otherwise (`--noverbose` included).
  """
  on = False
  for a in argv[1:]:
    if a == "--verbose":
      on = True
    elif a.startswith("--verbose="):
      on = a.split("=", 1)[1].lower() in ("true", "1", "yes", "t")
    elif a == "--noverbose":
      on = False
  return on


def quiet_import_banners(argv: list[str]) -> None:
  """Keeps library banners off the console of a default run; `--verbose` keeps them.

  Call it before transformers or JAX is imported: transformers reads
  TRANSFORMERS_NO_ADVISORY_WARNINGS when it is imported (its "PyTorch was not found" advice in a
  venv without torch), and JAX's backend probe lines are INFO records of one logger, raised to
  WARNING here (a probe that fails for a platform the run asked for still raises), and so are
  matplotlib's font cache lines (raised to WARNING, its font_manager to ERROR). Where libtpu is
  installed on a machine without TPU chips, its load warnings are ended too
  (`quiet_libtpu_off_tpu_host`).

  Args:
    argv: sys.argv.
  """
  quiet_libtpu_off_tpu_host()   # also lifts libtpu's lock: not only cosmetic
  if verbose_requested(argv):
    return
  os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
  std_logging.getLogger(_BACKEND_PROBE_LOGGER).setLevel(std_logging.WARNING)
  for name, level in _QUIETED_LOGGERS.items():
    std_logging.getLogger(name).setLevel(level)


class LibraryInfoFilter(std_logging.Filter):
  """Drops INFO/DEBUG records logged from installed libraries (orbax writes hundreds per run)."""

  def filter(self, record: std_logging.LogRecord) -> bool:
    """Whether to keep a record: WARNING and above always, else only if not from a library.

    Args:
      record: the log record (its pathname tells where it was logged).
    Returns:
      True to keep it.
    """
    if record.levelno >= std_logging.WARNING:
      return True
    return not os.path.realpath(record.pathname).startswith(_LIBRARY_DIRS)


class WarningsOnly(std_logging.Filter):
  """Keeps WARNING and above and lines logged with `extra=ON_CONSOLE` (a non-verbose console)."""

  def filter(self, record: std_logging.LogRecord) -> bool:
    """Whether to keep a record.

    Args:
      record: the log record.
    Returns:
      True when its level is WARNING or above or it was logged with `extra=ON_CONSOLE`.
    """
    return record.levelno >= std_logging.WARNING or getattr(record, "on_console", False)


@contextlib.contextmanager
def run_logging(workdir: str, verbose: bool = False) -> Iterator[None]:
  """absl INFO logging into <workdir>/log.txt, the console limited to warnings, while inside.

  Args:
    workdir: the run directory (must exist).
    verbose: keep every INFO line, libraries' included, on the console and in log.txt.
  Returns:
    a context manager; leaving it removes the handler and filters again.
  """
  handler = std_logging.FileHandler(os.path.join(workdir, "log.txt"))
  handler.setFormatter(std_logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
  absl_logger = logging.get_absl_logger()
  absl_logger.addHandler(handler)
  # On the handlers, not the loggers: libraries log through absl and through their own Python
  # loggers (jax), and both reach the console via the root logger's handlers.
  console = [] if verbose else std_logging.getLogger().handlers[:]
  filters = [] if verbose else [(handler, LibraryInfoFilter())] + [(h, WarningsOnly())
                                                                    for h in console]
  for h, f in filters:
    h.addFilter(f)
  logging.set_verbosity(logging.INFO)
  try:
    yield
  finally:
    absl_logger.removeHandler(handler)
    for h, f in filters:
      h.removeFilter(f)
    handler.close()


def summary_report(workdir: str, max_lines: int = 40) -> str:
  """The run's summary.md (without image links, at most `max_lines` lines) and its figures.

  Args:
    workdir: the run directory.
    max_lines: summary lines shown; a longer summary ends with a pointer to the file.
  Returns:
    text ending with "figures:" and one absolute PNG path per line ("" when the run wrote
    neither summary.md nor figures).
  """
  lines: list[str] = []
  path = os.path.join(workdir, "summary.md")
  if os.path.isfile(path):
    with open(path, encoding="utf-8") as f:
      for line in f:
        line = line.rstrip()
        if line.startswith("![") or (not line and (not lines or not lines[-1])):
          continue
        lines.append(line)
    while lines and not lines[-1]:
      lines.pop()
    if len(lines) > max_lines:
      lines = lines[:max_lines] + [f"... ({len(lines) - max_lines} more lines in {path})"]
  figures = sorted(glob.glob(os.path.join(os.path.abspath(workdir), "*.png")))
  if figures:
    lines += ["", "figures:"] + [f"  {p}" for p in figures]
  return "\n".join(lines)
