"""The env executor a config's `host` block names, and its one-line errors."""
import os
import sys

import pytest

import lib.hostloop
from lib.hostloop.executor_factory import make_executor
from lib.hostloop.executors import InlineExecutor, ProcessExecutor
from lib.run.config_blocks import host_block


def test_config_block_and_one_line_errors():
  host = host_block()
  assert host["executor"] == "inline"
  assert isinstance(make_executor(host), InlineExecutor)
  ex = make_executor(host_block(executor="processes", step_timeout_s=5.0))
  assert isinstance(ex, ProcessExecutor) and ex.step_timeout_s == 5.0
  assert ex.capacity == os.cpu_count()   # workers=0: one per core
  with pytest.raises(ValueError, match="host.executor='threads'; valid: inline, processes, ray"):
    make_executor(host_block(executor="threads"))
  with pytest.raises(KeyError, match="host block has no fields"):
    host_block(executr="processes")


def test_ray_without_ray_installed_is_one_line(monkeypatch):
  monkeypatch.setitem(sys.modules, "ray", None)   # import ray raises ModuleNotFoundError
  monkeypatch.delitem(sys.modules, "lib.hostloop.ray_executor", raising=False)
  monkeypatch.delattr(lib.hostloop, "ray_executor", raising=False)
  with pytest.raises(ValueError, match=r"host.executor='ray' needs Ray: pip install -e '.\[ray\]'"):
    make_executor(host_block(executor="ray"))
