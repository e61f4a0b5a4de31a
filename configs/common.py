"""Shared config helpers: the typed `:key=value` argument string of every config file.

`python launch.py --config=configs/x.py:seeds=3,debug=True` hands "seeds=3,debug=True" to
`get_config(arg)`, which calls `parse_arg(arg, seeds=1, debug=False)`. Types come from the
defaults, booleans are strict (`True/False/true/false/1/0`), unknown keys are rejected with the
list of valid ones, so a typo never silently runs the default experiment.
"""
import contextlib
from typing import Any, Iterator

import ml_collections

_TRUE = {"true", "1", "yes"}
_FALSE = {"false", "0", "no"}


# Dicts that `record_arg_defaults` blocks are filling; `parse_arg` writes into the empty ones.
_ARG_RECORDERS: list[dict[str, Any]] = []


@contextlib.contextmanager
def record_arg_defaults() -> Iterator[dict[str, Any]]:
  """Yields a dict that receives the `:key=value` defaults of the first `parse_arg` call inside
  the block (the config's own; a config that builds another config calls it again later).
  `launch.py --config=X --help` lists them."""
  seen: dict[str, Any] = {}
  _ARG_RECORDERS.append(seen)
  try:
    yield seen
  finally:
    _ARG_RECORDERS.remove(seen)


class ConfigArgError(ValueError):
  """A bad `:key=value` config argument (unknown key or value of the wrong type)."""


def _convert(key: str, text: str, default: Any) -> Any:
  if isinstance(default, bool):
    low = text.strip().lower()
    if low in _TRUE:
      return True
    if low in _FALSE:
      return False
    raise ConfigArgError(f"config arg {key}={text!r}: expected a boolean (True/False)")
  if default is None or isinstance(default, str):
    return text
  try:
    return type(default)(text)
  except ValueError as e:
    raise ConfigArgError(
        f"config arg {key}={text!r}: expected {type(default).__name__}") from e


def parse_arg(arg: str | None, **defaults: Any) -> ml_collections.ConfigDict:
  """Parses "k1=v1,k2=v2" into a ConfigDict over `defaults`, typed by the defaults.

  A bare token without `=` is shorthand for `token=True` when that default is a boolean
  (`:debug` means `:debug=True`), as in big_vision.
  """
  for recorder in _ARG_RECORDERS:
    if not recorder:
      recorder.update(defaults)
  out = dict(defaults)
  for token in (arg or "").split(","):
    token = token.strip()
    if not token:
      continue
    key, sep, value = token.partition("=")
    key = key.strip()
    if key not in defaults:
      valid = ", ".join(sorted(defaults)) or "(none)"
      raise ConfigArgError(f"unknown config arg {key!r}; valid: {valid}")
    if not sep:
      if not isinstance(defaults[key], bool):
        raise ConfigArgError(f"config arg {key!r} needs a value ({key}=...)")
      out[key] = True
    else:
      out[key] = _convert(key, value, defaults[key])
  return ml_collections.ConfigDict(out)


def debug_switch(get_config, arg: str | None) -> bool | None:
  """The value of the `:debug` arg that a config file's `get_config(arg)` parses.

  Args:
    get_config: the config file's `get_config`.
    arg: the `:key=value` string given to it (None: none given).
  Returns:
    The parsed `debug` (its default when `arg` does not set it), or None when the config
    declares no `debug` arg.
  """
  with record_arg_defaults() as defaults:
    get_config(arg) if arg is not None else get_config()  # pylint: disable=expression-not-assigned
  return bool(parse_arg(arg, **defaults).debug) if "debug" in defaults else None
