"""The host loop's env executor from a config's `host` block (`lib.run.config_blocks.host_block`):

    loop = HostLoop(backend, ..., executor=lambda: make_executor(config.host))

Kept apart from lib/hostloop/executors.py because the `ray` executor imports that module (and Ray,
which only this function imports, when a config asks for it).
"""
from typing import Any

from lib.hostloop.executors import KINDS, EnvExecutor, InlineExecutor, ProcessExecutor
from lib.run.config_blocks import host_block


def make_executor(host: Any) -> EnvExecutor:
  """The executor of a config's `host` block (lib.run.config_blocks.host_block).

  Args:
    host: a `host` block (its missing fields take their defaults).
  Raises:
    ValueError: an unknown executor name.
  """
  host = host_block(**dict(host))
  kind = host["executor"]
  if kind == "inline":
    return InlineExecutor()
  if kind == "processes":
    return ProcessExecutor(host["step_timeout_s"], host["reset_timeout_s"], host["workers"])
  if kind == "ray":
    try:
      from lib.hostloop import ray_executor  # pylint: disable=g-import-not-at-top  (optional: ray)
    except ModuleNotFoundError as e:
      if e.name != "ray":
        raise
      raise ValueError("host.executor='ray' needs Ray: pip install -e '.[ray]'") from None
    return ray_executor.RayExecutor(host["step_timeout_s"], host["reset_timeout_s"],
                                    host["workers"], address=host["ray_address"],
                                    num_cpus=host["ray_num_cpus"])
  raise ValueError(f"host.executor={kind!r}; valid: {', '.join(KINDS)}")
