"""The executors benchmark's helpers: executor names, timing-free rows, executors kept open across
rounds. Its debug run is in test_bench_debug_runs.py."""
import pytest

from envs.toy.latency_env import LatencyEnv
from experiments.bench.host_executors import KeptOpenExecutor, parse_executor, timing_free
from lib.hostloop.executors import EnvCall, InlineExecutor


def test_parse_executor():
  assert parse_executor("inline") == ("inline", 1)
  assert parse_executor("processes:32") == ("processes", 32)
  assert parse_executor("ray:8") == ("ray", 8)
  for bad in ("ray", "processes:0", "threads:4", "inline:2", "ray:x"):
    with pytest.raises(ValueError, match="inline"):
      parse_executor(bad)


def test_timing_free_drops_only_clock_fields():
  row = {"level": 0, "wall_s": 1.5, "model_latency_s": 0.2, "status": "success",
         "transcript": [{"type": "call", "text": "a", "latency_s": 0.1}, {"type": "reset"}]}
  assert timing_free(row) == {"level": 0, "status": "success",
                              "transcript": [{"type": "call", "text": "a"}, {"type": "reset"}]}
  assert row["wall_s"] == 1.5   # the row itself is left alone


def test_kept_open_executor_survives_close_until_close_for_real():
  inner = InlineExecutor()
  kept = KeptOpenExecutor(inner)
  assert kept.capacity is None
  kept.run([EnvCall(0, "reset", make_env=lambda: LatencyEnv(0.0), seed=1)])
  kept.close()
  assert 0 in inner.envs        # HostLoop.run's close left the envs in place
  kept.close_for_real()
  assert not inner.envs
