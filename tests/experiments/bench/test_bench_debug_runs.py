"""Every benchmark's debug config runs end to end with interleaved rounds (lib/bench_rounds.py):
strict-JSON summary with the machine state, and no headline ratio on a noisy run."""
import importlib
import json

import pytest

from experiments import registry

# config module -> (summary key of the headline ratio(s), table key of the measured ratio)
BENCHES = {
    "sampler": ("ratio_by_batch", "ratio"),
    "qwen3_5": ("ratio_by_batch", "ratio"),
    "train": ("ratios", "ratio_jax_over_torch"),
    "host_loop": ("speedup_vs_sequential", None),
    "serve": ("throughput_ratio", None),
    "minigrid": ("ratio_vs_farama", "ratio"),
}


def _headlines(value):
  return list(value.values()) if isinstance(value, dict) else [value]


@pytest.mark.parametrize("name", sorted(BENCHES))
def test_debug_run_reports_rounds_load_and_noisy(name, tmp_path):
  config = importlib.import_module(f"configs.bench.{name}").get_config("debug=True")
  if name == "minigrid":
    config.batch, config.steps = 4, 3
    config.minigrid.tasks, config.minigrid.peers = ["BabyAI-GoToRedBall-v0"], False
    config.minigrid.farama_steps = 20
  if name in ("sampler", "qwen3_5"):
    config.batches, config.new_tokens = [1], 4
  if name == "host_loop":
    config.episodes = 2
  assert config.get("rounds", config.get("bench", {}).get("rounds")) == 2
  registry.get(config.experiment)(config, str(tmp_path))
  text = (tmp_path / "summary.json").read_text()
  data = json.loads(text, parse_constant=lambda c: pytest.fail(f"bare {c} in summary.json"))
  summary, table = data["summary"], data["table"]
  machine = summary["machine"]
  assert machine["rounds"] == 2 and machine["cores"] >= 1
  assert machine["load_1min_before"] >= 0 and machine["load_1min_after"] >= 0
  assert set(machine["threads"]) >= {"OMP_NUM_THREADS", "MKL_NUM_THREADS", "XLA_FLAGS"}
  assert summary["noisy"] == (machine["load_1min_max"] > machine["cores"])
  head_key, row_key = BENCHES[name]
  heads = _headlines(summary[head_key])
  assert heads and all((h is None) == summary["noisy"] for h in heads)
  if row_key:   # the table keeps the measured ratio and its range over the rounds
    measured = [r for r in table if r.get(row_key) is not None]
    assert measured and all(r["ratio_min"] <= r[row_key] <= r["ratio_max"] for r in measured)
  assert "Interleaved rounds" in (tmp_path / "summary.md").read_text()
