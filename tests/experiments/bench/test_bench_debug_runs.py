"""Every benchmark's debug config runs end to end with interleaved rounds (lib/bench/rounds.py):
strict-JSON summary with the machine state, and no headline ratio on a noisy run; the sampler and
training benchmarks also carry the physical limit (lib/plan/roofline.py) and their share of it."""
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
    "host_executors": ("speedup_vs_inline", "ratio"),
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
  if name == "host_executors":   # one TextWorld game; Ray on the latency env only
    config.textworld.eval_seeds, config.textworld.executors = [101], ("inline", "processes:2")
  assert config.get("rounds", config.get("bench", {}).get("rounds")) == 2
  registry.get(config.experiment)(config, str(tmp_path))
  text = (tmp_path / "summary.json").read_text()
  data = json.loads(text, parse_constant=lambda c: pytest.fail(f"bare {c} in summary.json"))
  summary, table = data["summary"], data["table"]
  machine = summary["machine"]
  assert machine["rounds"] == 2 and machine["cores"] >= 1
  assert machine["load_1min_before"] >= 0 and machine["load_1min_after"] >= 0
  assert set(machine["threads"]) >= {"OMP_NUM_THREADS", "MKL_NUM_THREADS", "XLA_FLAGS"}
  # a bench whose own workers outnumber the cores is judged by the load before its rounds
  judged = machine["load_1min_before"] if machine.get("own_load") else machine["load_1min_max"]
  assert summary["noisy"] == (judged > machine["cores"])
  assert machine.get("own_load", False) == (name == "host_executors")
  head_key, row_key = BENCHES[name]
  heads = _headlines(summary[head_key])
  assert heads and all((h is None) == summary["noisy"] for h in heads)
  if row_key:   # the table keeps the measured ratio and its range over the rounds
    measured = [r for r in table if r.get(row_key) is not None]
    assert measured and all(r["ratio_min"] <= r[row_key] <= r["ratio_max"] for r in measured)
  assert "Interleaved rounds" in (tmp_path / "summary.md").read_text()
  if name in TABLE_CHECKS:
    TABLE_CHECKS[name](summary, table)
  if name in ROOFLINE_CHECKS:
    assert "Physical limit, measured at the start of this run" in (
        tmp_path / "summary.md").read_text()
    ROOFLINE_CHECKS[name](summary, table)


def _check_decode_roofline(summary, table, read_mb=None):
  gb_s = summary["roofline"]["memory"]["gb_s"]
  assert gb_s > 0 and summary["roofline"]["matmul"]["gflop_s"] > 0
  for r in table:
    assert r["read_MB_per_step"] > r["weight_MB_per_step"] > 0 and r["cache_MB_per_step"] > 0
    steps_s = r["ours_tok_s"] / r["batch"]
    assert r["ours_GB_s"] == pytest.approx(r["read_MB_per_step"] / 1e3 * steps_s)
    assert r["bandwidth_frac"] == pytest.approx(r["ours_GB_s"] / gb_s)
    assert r["bandwidth_bound_tok_s"] == pytest.approx(gb_s * 1e3 / r["read_MB_per_step"]
                                                       * r["batch"])
  fracs = summary["bandwidth_frac_by_batch"]
  assert fracs and all((f is None) == summary["noisy"] for f in fracs.values())
  if read_mb is not None:
    assert [r["read_MB_per_step"] for r in table] == [pytest.approx(read_mb)]


def _check_sampler(summary, table):
  # qwen3-tiny (32,992 float32 params, untied 128 x 32 table), batch 1, 16-token prompt, 4 new
  # tokens: weights less 127 unread table rows, the int32 cache index, and per filled slot K + V
  # of 2 layers (2 kv heads x 16) + 1 mask byte, over 16 + (4 + 1) / 2 slots on average.
  _check_decode_roofline(summary, table,
                         read_mb=(4 * (32992 - 127 * 32) + 4 + (2 * 2 * 2 * 16 * 4 + 1) * 18.5) / 1e6)
  # The prefill side of the rounds: decode-only rate and prefill MFU from the recorded medians.
  # Prefill FLOPs: 32,992 params less the untied 128 x 32 input table, the 128 x 32 head at the
  # last position only, 2 attention layers x 4 heads x 16 over the 16-token prompt (1 row).
  n, head = 32992 - 4096, 4096
  flops = 2 * (n - head) * 16 + 2 * head + 2 * 2 * 4 * 16 * 16**2
  peak, gb_s = summary["roofline"]["matmul"]["gflop_s"], summary["roofline"]["memory"]["gb_s"]
  for r in table:
    assert r["prefill_GFLOP"] == pytest.approx(flops / 1e9)
    assert r["prefill_mfu"] == pytest.approx(flops / 1e9 / (r["prefill_ms"] / 1e3) / peak)
    if r["decode_steps_s"] is not None:      # None when the medians' difference is not positive
      assert r["decode_GB_s"] == pytest.approx(r["read_MB_per_step"] / 1e3 * r["decode_steps_s"])
      assert r["decode_bandwidth_frac"] == pytest.approx(r["decode_GB_s"] / gb_s)
  assert set(summary["prefill_mfu_by_batch"]) == set(summary["decode_bandwidth_frac_by_batch"])


def _check_train(summary, table):
  peak = summary["roofline"]["matmul"]["gflop_s"]
  assert peak > 0
  # qwen3-tiny: N = 32,992 - 4,096 (untied input table) - 4,096 (output head), 4 x 32 tokens,
  # 2 layers x 4 heads x 16; the head runs on the last 16 + 1 positions of each row.
  flops = 6 * (32992 - 2 * 4096) * 4 * 32 + 6 * 2 * 4 * 16 * 4 * 32**2 + 6 * 4096 * 4 * 17
  for r in table:
    assert r["GFLOP_per_update"] == pytest.approx(flops / 1e9)
    assert r["same_first_loss"], r     # the windowed torch loss is the same loss as ours
    for side in ("jax", "torch"):
      gflop_s = flops / 1e9 * r[f"{side}_tokens_per_s"] / (4 * 32)   # tokens/s rounded to 0.1
      assert r[f"{side}_GFLOP_s"] == pytest.approx(gflop_s, rel=1e-3)
      assert r[f"{side}_mfu"] == pytest.approx(r[f"{side}_GFLOP_s"] / peak)
  assert set(summary["mfu"]) == {"sft", "grpo"}
  assert all((m is None) == summary["noisy"] for m in summary["mfu"].values())


ROOFLINE_CHECKS = {"sampler": _check_sampler, "qwen3_5": _check_decode_roofline,
                   "train": _check_train}


def _check_host_executors(summary, table):
  # Every executor played the same episodes with the same rows as inline, the baseline of the
  # same run; efficiency is the ratio per worker; the load before and after is the full triple.
  assert {(r["env"], r["executor"], r["workers"]) for r in table} == {
      ("latency", "inline", 1), ("latency", "processes", 4), ("latency", "ray", 4),
      ("textworld", "inline", 1), ("textworld", "processes", 2)}
  assert summary["same_rows_as_inline"] and all(r["same_rows_as_inline"] for r in table)
  for r in table:
    assert r["episodes"] == {"latency": 8, "textworld": 1}[r["env"]] and r["env_steps"] > 0
    assert r["efficiency"] == pytest.approx(r["ratio"] / r["workers"])
    assert r["episodes_per_s_min"] <= r["episodes_per_s"] <= r["episodes_per_s_max"]
    assert r["warmup_s"] > 0 and (r["ray_num_cpus"] is None) == (r["executor"] != "ray")
    if r["executor"] == "inline":
      assert r["ratio"] == r["ratio_min"] == r["ratio_max"] == 1.0
  assert len(summary["loadavg_before"]) == len(summary["loadavg_after"]) == 3
  assert summary["cpu_count"] >= 1 and summary["baseline"] == "inline"


# Checks of a benchmark's own columns, beside the common ones above.
TABLE_CHECKS = {"host_executors": _check_host_executors}


def test_sampler_resumes_rows_written_before_the_roofline_columns(tmp_path, capsys):
  config = importlib.import_module("configs.bench.sampler").get_config("debug=True")
  config.batches, config.new_tokens = [1], 4
  old = {"batch": 1, "new_tokens": 4, "ours_tok_s": 10.0, "transformers_tok_s": 5.0,
         "ratio": 2.0, "ratio_min": 1.5, "ratio_max": 2.5, "greedy_agree_frac": 1.0}
  (tmp_path / "results.jsonl").write_text(json.dumps(old) + "\n")
  summary = registry.get(config.experiment)(config, str(tmp_path))
  assert summary["bandwidth_frac_by_batch"] == {"1": None}
  assert "bandwidth not measured for this row" in capsys.readouterr().out

