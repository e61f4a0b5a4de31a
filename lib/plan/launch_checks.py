"""What launch.py checks on a resolved config before it creates anything: every configured input
path exists, and a model checkpoint is a local Hugging Face directory. Each failure is one line
(`LaunchError`), which launch.py prints on stderr with exit code 2.
"""
import os
from typing import Any, Iterator

from lib.models.model_setup import check_checkpoint

# Config fields that name an input which must exist before the run starts (checkpoints, data and
# model directories); and value endings that mark a data file given as a path.
INPUT_FIELD_ENDINGS = ("checkpoint", "_dir", "path")
INPUT_FILE_ENDINGS = (".jsonl", ".json", ".npy", ".npz", ".safetensors", ".txt")


class LaunchError(ValueError):
  """A bad command line; printed as one line."""


def config_fields(config: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
  """Every leaf field of a ConfigDict (or nested dict), sorted by key at each level.

  Args:
    config: the ConfigDict.
    prefix: prepended to each dotted name.
  Returns:
    an iterator of (dotted name, value).
  """
  for key in sorted(config.keys()):
    value = config[key]
    if hasattr(value, "keys"):
      yield from config_fields(value, f"{prefix}{key}.")
    else:
      yield f"{prefix}{key}", value


def check_input_paths(config: Any) -> None:
  """Fails on the first configured input that is not there.

  Inputs are string fields whose name ends in `checkpoint`, `_dir` or `path` (at any depth, e.g.
  `backend.model.checkpoint`) and values like `dir/file.jsonl`; URLs and "" are skipped. A
  `*checkpoint` field must also be a Hugging Face directory with a config.json
  (`lib.models.model_setup.check_checkpoint`), so an empty or wrong directory fails here, not after
  data generation.

  Args:
    config: the resolved run config.
  Returns:
    None.
  Raises:
    LaunchError: one line naming the field, its value and what is wrong.
  """
  for name, value in config_fields(config):
    if not isinstance(value, str) or not value or "://" in value:
      continue
    leaf = name.rsplit(".", 1)[-1]
    named_input = leaf.endswith(INPUT_FIELD_ENDINGS)
    data_file = os.sep in value and value.endswith(INPUT_FILE_ENDINGS)
    if not (named_input or data_file):
      continue
    if not os.path.exists(value):
      raise LaunchError(f"config.{name}={value!r} does not exist")
    if not leaf.endswith("checkpoint"):
      continue
    if os.path.isdir(value) and not os.listdir(value):
      raise LaunchError(f"config.{name}={value!r} is an empty directory")
    try:
      check_checkpoint(value)
    except FileNotFoundError as e:
      raise LaunchError(f"config.{name}: {e}") from None
