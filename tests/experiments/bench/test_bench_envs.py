"""bench_envs runs end to end at toy size and computes ratios against the named baseline."""
import json
import math

from configs.bench import envs as bench_config
from experiments.bench import envs as bench_envs


def test_ratios_use_the_named_baseline():
  rows = [{"name": "a", "steps_per_s": 30.0, "baseline": "b"}, {"name": "b", "steps_per_s": 10.0, "baseline": None},
          {"name": "c", "steps_per_s": 5.0, "baseline": "missing"}]
  bench_envs._add_ratios(rows)
  assert rows[0]["ratio"] == 3.0 and math.isnan(rows[1]["ratio"]) and math.isnan(rows[2]["ratio"])


def test_debug_run_writes_a_table(tmp_path):
  config = bench_config.get_config("debug=True")
  config.batch, config.steps, config.sections = 4, 3, ["sokoban"]
  config.sokoban.num_levels = 4
  bench_envs.run(config, str(tmp_path))
  table = json.loads((tmp_path / "summary.json").read_text())["table"]
  names = [r["name"] for r in table]
  assert names == ["sokoban/ours_pooled_reset", "sokoban/ours_gymnax_step", "sokoban/jumanji"]
  assert all(r["steps_per_s"] > 0 and "error" not in r for r in table)
  assert table[0]["ratio"] == table[0]["steps_per_s"] / table[2]["steps_per_s"]
