"""experiments/device_smoke.py on CPU: the plan is compiled and one real step runs per case; CPU
reports no memory statistics, so `measured` is null with coverage 0 (never 0 bytes), and a rerun
resumes from results.jsonl."""
import json

import pytest

from configs import common
from configs import device_smoke as smoke_config
from experiments import device_smoke


def test_cpu_run_plans_steps_and_reports_null_measurements(tmp_path):
  config = smoke_config.get_config("debug=True,case=small,trainer=sft")
  summary = device_smoke.run(config, str(tmp_path))
  assert summary["platform"] == "cpu" and summary["cases"] == 1
  assert summary["measured_coverage"] == 0 and summary["max_measured_over_planned"] is None
  (row,) = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
  assert row["case"] == "small/sft" and row["planned_bytes"] > 0 and row["loss"] > 0
  assert row["analytic_bytes"] > 0 and row["step_s"] > 0 and row["platform"] == "cpu"
  assert row["measured_over_analytic"] is None
  assert row["measured_bytes"] is None and row["measured_over_planned"] is None
  assert row["model_flops"] > 0 and row["peak_bf16_flops"] is None and row["mfu"] is None  # CPU
  assert json.loads((tmp_path / "summary.json").read_text())["summary"]["measured_coverage"] == 0
  again = device_smoke.run(config, str(tmp_path))      # resumed: nothing is recomputed
  assert again == summary


def test_case_and_trainer_args_select_rows_and_unknown_names_are_one_line():
  full = smoke_config.get_config()
  assert [c["name"] for c in full.cases] == ["small", "medium", "gencoord_paper",
                                             "gencoord_recipe", "grpo_7b_micro"]
  assert list(full.cases[2]["trainers"]) == ["sft"]   # the paper-scale GenCoord step is SFT only
  recipe = device_smoke.case_config(full, full.cases[3], "sft").plan   # micro 4 x accumulation 4
  assert (recipe.rows, recipe.micro_rows, recipe.seq_len) == (16, 4, 2048)
  full.mesh.fsdp = 8                                   # the 7B GRPO micro-step: a row per device
  grpo7 = device_smoke.case_config(full, full.cases[4], "grpo").plan
  assert (grpo7.rows, grpo7.micro_rows, grpo7.seq_len, grpo7.response_len) == (8, 0, 2048, 512)
  one = smoke_config.get_config("case=medium,trainer=grpo")
  assert [c["name"] for c in one.cases] == ["medium"] and list(one.trainers) == ["grpo"]
  with pytest.raises(common.ConfigArgError, match="unknown case 'large'; valid: small, medium"):
    smoke_config.get_config("case=large")
  with pytest.raises(common.ConfigArgError, match="unknown trainer 'dpo'"):
    smoke_config.get_config("trainer=dpo")


def test_accumulated_case_runs_its_micro_batches(tmp_path):
  config = smoke_config.get_config("debug=True,case=recipe,trainer=sft")
  device_smoke.run(config, str(tmp_path))
  (row,) = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
  assert (row["rows"], row["micro_rows"]) == (4, 2) and row["loss"] > 0


def test_mfu_is_model_flops_over_time_devices_and_peak():
  from lib.plan import compile_target, roofline
  # The GenCoord recipe by hand: N = 0.75e9 matmul weights (illustrative), 16 x 2,048 tokens,
  # 6 full-attention layers x 8 heads x 256 head_dim, 0.5 s per step on 8 H100s (989 TFLOP/s).
  flops = roofline.update_flops(matmul_params=750_000_000, layers=6, heads=8, head_dim=256,
                                batch=16, seq_len=2048)
  assert flops == 6 * 750_000_000 * 32_768 + 6 * 6 * 8 * 256 * 16 * 2048**2
  peak = compile_target.peak_bf16_flops("NVIDIA H100 80GB HBM3")
  assert peak == 989e12 and compile_target.peak_bf16_flops("NVIDIA H100 PCIe") == 756e12
  assert compile_target.peak_bf16_flops("TPU v5 lite") == 197e12
  assert compile_target.peak_bf16_flops("NVIDIA A100-SXM4-40GB") == 312e12
  assert compile_target.peak_bf16_flops("cpu") is None
  # by hand: 6 x 0.75e9 x 32,768 = 1.47456e14 (weights) + 6 x 6 x 8 x 256 x 16 x 2,048^2 =
  # 4.9478e12 (attention) = 1.52404e14 FLOPs; over 0.5 s x 8 x 989e12 FLOP/s = 3.956e15
  mfu = roofline.mfu(model_flops=flops, seconds=0.5, devices=8, peak_flops=peak)
  assert flops == 152_403_802_324_992
  assert mfu == pytest.approx(0.0385247, rel=1e-6)


def test_a_row_the_device_cannot_hold_is_a_recorded_failure_and_the_run_goes_on(tmp_path,
                                                                                 monkeypatch):
  import jax
  real = device_smoke.measure

  def oom_for_medium(c, seed):
    if c.model.overrides["num_layers"] == 4:    # the debug "medium" case
      raise jax.errors.JaxRuntimeError("RESOURCE_EXHAUSTED: Out of memory while trying to "
                                       "allocate 64.99GiB with allocator GPU_0_bfc on device 0.")
    return real(c, seed)
  monkeypatch.setattr(device_smoke, "measure", oom_for_medium)
  config = smoke_config.get_config("debug=True,trainer=sft")
  summary = device_smoke.run(config, str(tmp_path))
  assert summary["cases"] == 3 and summary["device_oom"] == ["medium/sft"]
  rows = {r["case"]: r for r in map(json.loads, (tmp_path / "results.jsonl").read_text()
                                    .splitlines())}
  assert rows["small/sft"]["loss"] > 0 and "error" not in rows["small/sft"]
  failed = rows["medium/sft"]
  assert failed["error"] == "device_oom" and "64.99GiB" in failed["error_detail"]
  assert failed["measured_bytes"] is None and failed["measured_over_planned"] is None
  assert failed["planned_bytes"] > 0 and failed["memory_at_failure"] is None   # CPU: no counters
  assert "device_oom" in (tmp_path / "summary.md").read_text()

  def broken(c, seed):
    raise jax.errors.JaxRuntimeError("INTERNAL: something else")
  monkeypatch.setattr(device_smoke, "measure", broken)
  with pytest.raises(jax.errors.JaxRuntimeError, match="something else"):
    device_smoke.run(smoke_config.get_config("debug=True,trainer=grpo"), str(tmp_path / "b"))
