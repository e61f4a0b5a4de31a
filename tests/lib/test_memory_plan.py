"""lib/memory_plan.py: compiled plans on 8 forced CPU devices (a child process, as in
test_train_sharding.py: XLA's device count is fixed at start-up), the paper-scale arithmetic of
the issue, the config blocks and `launch.py --plan` (one process per command line, forked from
tests/launch_server.py)."""
import json
import os
import subprocess
import sys

import ml_collections
import pytest

from launch_server import LaunchServer
from lib import memory_plan
from lib.model_setup import model_block

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# tests/ on the path too: the child (this file as a script) imports tests/launch_server.py
ENV8 = dict(os.environ, JAX_PLATFORMS="cpu",
            PYTHONPATH=os.pathsep.join([ROOT, os.path.join(ROOT, "tests")]),
            XLA_FLAGS=os.environ.get("XLA_FLAGS", "") +
            " --xla_force_host_platform_device_count=8")
ADAMW = dict(lr=1e-6, warmup_frac=0.0, schedule="constant", weight_decay=0.01, b1=0.9, b2=0.999,
             clip_norm=1.0)
# Every matrix of this model has a dimension divisible by 8 and >= 1024 elements (so FSDP splits
# it); only the norms' scales (0.4% of the parameters) stay replicated.
SMALL = dict(vocab_size=512, hidden_size=128, intermediate_size=256, num_heads=4, num_kv_heads=2,
             head_dim=32)


def _config(preset="qwen3-tiny", overrides=None, fsdp=1, dtype="float32", **plan):
  c = ml_collections.ConfigDict()
  c.experiment = "train_sft"
  c.model = model_block(preset=preset, overrides=overrides or {}, dtype=dtype)
  c.mesh = dict(data=1, fsdp=fsdp)
  c.optim = dict(ADAMW)
  c.plan = memory_plan.plan_block(**plan)
  return c


def test_compiled_plans_on_8_devices():
  out = subprocess.run([sys.executable, os.path.abspath(__file__)], env=ENV8, cwd=ROOT,
                       capture_output=True, text=True, timeout=900)
  assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
  for name in ("sft", "grpo", "opsd", "fsdp"):
    assert f"{name} ok" in out.stdout, out.stdout


def _child():
  import jax
  assert jax.device_count() == 8, jax.devices()
  settings = dict(overrides=SMALL, rows=16, micro_rows=8, seq_len=24, response_len=8,
                  device_memory_gib=1.0)
  plans = {}
  for trainer in ("sft", "grpo", "opsd"):
    plan = plans[trainer] = memory_plan.compute(_config(fsdp=8, trainer=trainer,
                                                        reference=trainer == "grpo", **settings))
    a, b = plan.memory_analysis, plan.breakdown
    assert plan.compiled and plan.per_device_bytes > 0 and plan.fits is True
    assert plan.mesh == {"data": 1, "fsdp": 8, "model": 1}
    # The compiled step's arguments are the state computed from the shardings (+ the batch, the
    # step counter, the OPSD teacher), and its donated state is aliased to its output.
    state = b["params"] + b["optimizer_state"]
    teacher = b["reference"] if trainer == "opsd" else 0
    assert state + teacher <= a["argument"] < state + teacher + 4096, (a, b)
    assert a["alias"] >= state - 64, (a, b)
    expected = a["argument"] + a["output"] + a["temp"] - a["alias"] + b["kv_cache"]
    expected += b["reference"] if trainer == "grpo" else 0
    assert plan.per_device_bytes == expected
    print(f"{trainer} ok", flush=True)
  # the SFT plan above against the same step on one device
  one, eight = memory_plan.compute(_config(fsdp=1, trainer="sft", **settings)), plans["sft"]
  ratio = one.breakdown["params"] / eight.breakdown["params"]
  assert 7.5 < ratio <= 8.0, ratio
  ratio = one.breakdown["optimizer_state"] / eight.breakdown["optimizer_state"]
  assert 7.5 < ratio <= 8.0, ratio
  assert eight.memory_analysis["argument"] < one.memory_analysis["argument"] / 6
  print("fsdp ok", flush=True)


def test_qwen2_5_7b_fp32_adamw_does_not_fit_one_80gb_device():
  # The arithmetic: fp32 weights 30.5 GB + reference 30.5 + AdamW moments 61 + gradients
  # 30.5 = ~152 GB. Analytic (compiling the 7B step takes ~1 min on CPU; the README has those).
  plan = memory_plan.compute(_config("qwen2.5-7b", trainer="grpo", rows=8, seq_len=2048,
                                     response_len=512, reference=True, device_memory_gib=80.0),
                             compile_step=False)
  b = plan.breakdown
  assert abs(b["params"] - 4 * 7.6156e9) < 1e7
  assert b["optimizer_state"] == pytest.approx(2 * b["params"], rel=1e-6)
  assert b["reference"] == b["gradients"] == b["params"]
  assert 150e9 < b["params"] + b["optimizer_state"] + b["gradients"] + b["reference"] < 155e9
  assert plan.fits is False and not plan.compiled and plan.memory_analysis is None
  assert plan.device_memory_bytes == 80 * 2**30


def test_embedder_and_kv_cache_are_counted():
  plan = memory_plan.compute(_config("qwen2.5-7b", trainer="grpo", rows=256, micro_rows=8,
                                     seq_len=2048, response_len=512, embedder="qwen3-embedding-8b",
                                     device_memory_gib=80.0), compile_step=False)
  assert abs(plan.breakdown["embedder"] - 2 * 7.5673e9) < 1e7             # bf16 weights
  # 28 layers x 2 (k, v) x 4 kv heads x 128 x 256 rows x 2048 tokens, in the compute dtype.
  assert plan.breakdown["kv_cache"] == 28 * 2 * 4 * 128 * 256 * 2048 * 4


def test_qwen3_5_preset_plans_from_its_own_family():
  plan = memory_plan.compute(_config("qwen3.5-0.8b", trainer="grpo", rows=8, seq_len=256,
                                     response_len=64), compile_step=False)
  config = memory_plan.arch_config(model_block(preset="qwen3.5-0.8b"))
  assert plan.breakdown["params"] == 4 * config.num_params()
  # Only the 6 full-attention layers of 24 keep a KV cache (float32 compute here).
  assert plan.breakdown["kv_cache"] == 6 * 2 * 2 * 256 * 8 * 256 * 4
  assert plan.fits is None            # CPU reports no memory and no target was given


def test_arch_config_reads_a_checkpoints_config_json_without_weights(tmp_path):
  from lib import models
  config = models.preset("qwen2.5-7b")
  (tmp_path / "config.json").write_text(json.dumps(config.to_hf()))
  assert memory_plan.arch_config(model_block(checkpoint=str(tmp_path))) == config


def test_wm_train_scale_arg():
  from configs.wm import train
  assert train.get_config("scale=paper").model.preset == "qwen2.5-7b"
  assert train.get_config("scale=paper").plan.embedder == "qwen3-embedding-8b"
  assert train.get_config("scale=paper,embedder=openai").plan.embedder == ""   # served elsewhere
  assert train.get_config("scale=paper,condition=OPSD-GT").plan.trainer == "opsd"
  with pytest.raises(ValueError, match="unknown scale 'huge'"):
    train.get_config("scale=huge")


def test_bad_plan_blocks_are_refused():
  with pytest.raises(KeyError, match="no fields"):
    memory_plan.plan_block(rowz=3)
  with pytest.raises(ValueError, match="unknown plan.trainer"):
    memory_plan.compute(_config(trainer="ppo"), compile_step=False)
  with pytest.raises(ValueError, match="multiple of micro_rows"):
    memory_plan.compute(_config(rows=10, micro_rows=4), compile_step=False)


def test_remat_shrinks_the_analytic_activations():
  plans = {}
  for remat in ("none", "dots", "full"):
    c = _config(overrides=dict(SMALL, num_layers=8), trainer="sft", rows=4, seq_len=1024)
    c.model.remat = remat
    plans[remat] = memory_plan.compute(c, compile_step=False).breakdown["activations"]
  assert plans["full"] < plans["dots"] < plans["none"] / 2, plans


def test_check_before_run_passes_unknown_memory_and_can_be_switched_off(capsys):
  assert memory_plan.check_before_run(ml_collections.ConfigDict({"experiment": "x"})) is None
  assert memory_plan.check_before_run(_config()).fits is None       # CPU, no target memory
  assert memory_plan.check_before_run(_config(device_memory_gib=80.0)).fits is True
  tiny = _config(device_memory_gib=1e-6)
  with pytest.raises(SystemExit) as e:
    memory_plan.check_before_run(tiny)
  assert e.value.code == 2 and "needs" in capsys.readouterr().err
  tiny.plan.check = "off"
  assert memory_plan.check_before_run(tiny) is None
  tiny.plan.check = "sometimes"
  with pytest.raises(SystemExit):
    memory_plan.check_before_run(tiny)
  assert "unknown plan.check 'sometimes'" in capsys.readouterr().err


def test_paper_scale_configs():
  from configs.conpact import train as conpact_train
  from configs.gencoord import learned
  for config, preset in ((conpact_train.get_config("scale=paper"), "qwen3-8b"),
                         (learned.get_config("scale=paper"), "qwen3.5-0.8b")):
    assert config.model.preset == preset and config.model.remat == "full"
    assert config.model.dtype == "bfloat16" and config.plan.trainer == "sft"
  assert learned.get_config("scale=paper").train.batch == 16 == learned.get_config(
      "scale=paper").plan.rows
  assert "plan" not in conpact_train.get_config("")
  with pytest.raises(ValueError, match="unknown scale 'big'"):
    learned.get_config("scale=big")


def test_a_run_stops_first_when_its_plan_does_not_fit(launch, tmp_path):
  # 7B GRPO on one 80 GB device: the analytic check stops it before the workdir exists.
  out = launch("--config=configs/wm/train.py:scale=paper", f"--workdir={tmp_path}/wm",
                "--config.plan.device_memory_gib=80")
  assert out.returncode == 2, out.stdout[-2000:] + out.stderr[-2000:]
  lines = out.stderr.strip().splitlines()
  assert len(lines) == 1, lines
  assert lines[0].startswith("launch.py: error: qwen2.5-7b (grpo) needs "), lines
  assert "per device on mesh data=1 x fsdp=1 x model=1, the device has 80.00 GiB" in lines[0]
  assert not (tmp_path / "wm").exists()


@pytest.fixture(scope="module")
def launch():
  server = LaunchServer(ENV8)
  yield lambda *args: server.run(*args, timeout=600)
  server.close()


def test_launch_plan_writes_plan_json_and_does_not_train(launch, tmp_path):
  out = launch("--config=configs/sft_toy.py:debug=True", f"--workdir={tmp_path}", "--plan",
                "--config.mesh.fsdp=8", "--config.plan.device_memory_gib=1")
  assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
  plan = json.loads((tmp_path / "plan.json").read_text())
  assert plan["fits"] is True and plan["mesh"]["fsdp"] == 8 and plan["per_device_bytes"] > 0
  assert plan["trainer"] == "sft" and plan["compiled"] is True
  assert os.listdir(tmp_path) == ["plan.json"]          # no checkpoint, no summary: no run
  assert "per device" in out.stdout and "fits: True" in out.stdout
  # 16 rows / 4 micro-batches = 4 rows cannot be split over 8 devices: one line, exit code 2.
  out = launch("--config=configs/sft_toy.py:debug=True", f"--workdir={tmp_path}/bad", "--plan",
                "--config.mesh.fsdp=8", "--config.train.accum_steps=4")
  assert out.returncode == 2, out.stdout[-2000:] + out.stderr[-2000:]
  assert out.stderr.strip().splitlines() == [
      "launch.py: error: plan.rows=16 must be a multiple of micro_rows=4, itself a multiple of "
      "data x fsdp = 8"], out.stderr


def test_launch_plan_of_wm_train_at_paper_scale_and_of_a_config_without_plan(launch, tmp_path):
  out = launch("--config=configs/wm/train.py:scale=paper", f"--workdir={tmp_path}/wm", "--plan",
                "--config.plan.compile=False", "--config.plan.device_memory_gib=80")
  assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
  plan = json.loads((tmp_path / "wm" / "plan.json").read_text())
  assert plan["model"] == "qwen2.5-7b" and plan["trainer"] == "grpo" and plan["fits"] is False
  assert plan["breakdown"]["embedder"] > 15e9
  out = launch("--config=configs/smoke.py:debug=True", f"--workdir={tmp_path}/smoke", "--plan")
  assert out.returncode == 0 and "no plan for this experiment" in out.stdout, out.stderr[-2000:]
  assert not (tmp_path / "smoke").exists()


if __name__ == "__main__":
  _child()
