"""Shared fixture of the live-Minecraft tests: one server + bots per test module."""
import pytest


@pytest.fixture(scope="module")
def rt(tmp_path_factory):
  """A started LiveRuntime (npm ci on first use), closed with all its Node processes after."""
  from envs.minecraft.live.node_setup import ensure_installed
  from envs.minecraft.live.runtime import LiveConfig, LiveRuntime
  ensure_installed()
  runtime = LiveRuntime(LiveConfig(speed=4.0, log_dir=str(tmp_path_factory.mktemp("logs"))))
  runtime.start()
  yield runtime
  runtime.close()
