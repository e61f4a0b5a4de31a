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
  assert config.rounds == 2
  bench_envs.run(config, str(tmp_path))
  data = json.loads((tmp_path / "summary.json").read_text())
  table, summary = data["table"], data["summary"]
  names = [r["name"] for r in table]
  assert names == ["sokoban/ours_pooled_reset", "sokoban/ours_gymnax_step", "sokoban/jumanji"]
  assert all(r["steps_per_s"] > 0 and "error" not in r for r in table)
  assert table[0]["ratio"] == table[0]["steps_per_s"] / table[2]["steps_per_s"]
  # two interleaved rounds: median between min and max, the ratio inside its per-round range
  assert all(r["steps_per_s_min"] <= r["steps_per_s"] <= r["steps_per_s_max"] for r in table)
  assert table[0]["ratio_min"] <= table[0]["ratio"] <= table[0]["ratio_max"]
  machine = summary["machine"]
  assert summary["noisy"] == machine["noisy"] == (machine["load_1min_max"] > machine["cores"])
  heads = summary["ratios"]
  assert set(heads) == {"sokoban/ours_pooled_reset", "sokoban/ours_gymnax_step"}
  assert all((v is None) == summary["noisy"] for v in heads.values())


def test_ratio_range_comes_from_the_rounds():
  rows = [{"name": "a", "steps_per_s": 4.0, "baseline": "b", "per_round": [2.0, 6.0]},
          {"name": "b", "steps_per_s": 2.0, "baseline": None, "per_round": [1.0, 3.0]}]
  bench_envs._add_ratios(rows)
  assert (rows[0]["ratio"], rows[0]["ratio_min"], rows[0]["ratio_max"]) == (2.0, 2.0, 2.0)
  assert "per_round" not in rows[0] and "ratio_min" not in rows[1]
