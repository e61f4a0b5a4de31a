"""lib/plan/memory_plan.py: compiled plans on 8 forced CPU devices (a child process, as in
test_train_sharding.py: XLA's device count is fixed at start-up), the paper-scale arithmetic of
the issue, the config blocks and `launch.py --plan` (one process per command line, forked from
tests/launch_server.py)."""
import glob
import importlib
import json
import os
import subprocess
import sys

import ml_collections
import pytest

from launch_server import LaunchServer
from lib.plan import memory_plan
from lib.run.config_blocks import model_block, plan_block

pytestmark = pytest.mark.long_module(45)   # scheduled first: tests/conftest.py

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
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
  c.plan = plan_block(**plan)
  return c


def test_compiled_plans_on_8_devices():
  out = subprocess.run([sys.executable, os.path.abspath(__file__)], env=ENV8, cwd=ROOT,
                       capture_output=True, text=True, timeout=900)
  assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
  for name in ("sft", "grpo", "opsd", "fsdp", "measured"):
    assert f"{name} ok" in out.stdout, out.stdout


def _live_bytes(device) -> int:
  """Bytes of the live (not donated/deleted) JAX buffers on `device`: CPU devices report no
  memory_stats, so this is the measured side of the plan-vs-run check."""
  import jax
  total = 0
  for x in jax.live_arrays():
    if not x.is_deleted():
      total += sum(s.data.nbytes for s in x.addressable_shards if s.device == device)
  return total


def _measure_sft_step(config, plan):
  """Runs the planned SFT step for real on the 8 devices, built the way the trainers build it
  (`lib.train.setup.create_state`, `lib.parallel.sharding.jit_step`), and checks the plan against
  the live buffers of the last device (the first also holds the unsharded initial weights): before
  the step they are its arguments, after it its outputs plus the batch (the donated state is gone).
  The temporaries inside the step are not visible on CPU; the device smoke run measures them."""
  import jax
  import numpy as np
  from flax import nnx
  from lib import models
  from lib.parallel import sharding
  from lib.sft import step as sft
  from lib.train import optim, setup as train_loop
  from lib.train.state import nnx_apply_fn
  apply_fn, params = nnx_apply_fn(models.build(memory_plan.arch_config(config.model),
                                               rngs=nnx.Rngs(0)))
  tx = optim.from_config(config.optim, 1)
  mesh = sharding.make_mesh(config.mesh.data, config.mesh.fsdp)
  state, state_sh = train_loop.create_state(params, tx, mesh)
  rows, length = config.plan.rows, config.plan.seq_len
  ids = np.random.default_rng(0).integers(3, 500, (rows, length)).astype(np.int32)
  batch = sharding.shard_batch({"input_ids": ids, "attention_mask": np.ones_like(ids),
                                "loss_mask": np.ones_like(ids)}, mesh)
  step = sharding.jit_step(sft.make_sft_step(apply_fn, tx, accum_steps=rows // config.plan.micro_rows,
                                             param_sharding=state_sh.params), mesh, state_sh)
  device = jax.devices()[-1]
  before = _live_bytes(device)
  a, b = plan.memory_analysis, plan.breakdown
  state_bytes = b["params"] + b["optimizer_state"]
  # Tolerance 0.1% (the step counter and the scalar metrics: 80 B of 649 KB measured).
  # arguments: the planned state (+ the step counter) and the batch
  assert state_bytes <= before - 3 * ids.nbytes // 8 <= state_bytes * 1.001, (before, b)
  assert abs(before - a["argument"]) <= 1e-3 * a["argument"], (before, a)
  state, metrics = step(state, batch)
  jax.block_until_ready(state)
  after = _live_bytes(device)
  assert abs(after - (before - a["alias"] + a["output"])) <= 1e-3 * after, (after, before, a)
  assert max(before, after) <= plan.per_device_bytes, (before, after, plan.per_device_bytes)
  print(f"measured ok: arguments {before} B (planned {a['argument']}), after the step {after} B, "
        f"planned peak {plan.per_device_bytes} B", flush=True)


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
  _measure_sft_step(_config(fsdp=8, trainer="sft", **settings), eight)


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
    plan_block(rowz=3)
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


def test_the_plan_pads_rows_as_the_run_does_when_their_lengths_are_given():
  from lib.sft import batches
  lengths = (250, 300, 301, 359, 700)
  plan = lambda **kw: memory_plan.compute(_config(overrides=SMALL, trainer="sft", rows=4,
                                                  **dict(dict(seq_len=2048), **kw)),
                                          compile_step=False)
  unknown = plan()                                  # no lengths: every row at the maximum
  assert unknown.seq_len == 2048 and unknown.padded_lengths is None
  assert plan(lengths=lengths, padding="max").seq_len == 2048
  longest = plan(lengths=lengths, padding="longest")  # lib.sft.batches.left_padded: 700 -> 704
  assert longest.seq_len == 704 and longest.padded_lengths == {704: 5}
  assert longest.breakdown["activations"] == plan(seq_len=704).breakdown["activations"]
  buckets = plan(lengths=lengths, padding="buckets", bucket_multiple=128)
  assert buckets.padded_lengths == {256: 1, 384: 3, 768: 1} and buckets.seq_len == 768
  pow2 = plan(lengths=lengths, padding="buckets")   # length_grouped's power-of-two buckets
  assert pow2.padded_lengths == {256: 1, 512: 3, 1024: 1}
  assert pow2.padded_lengths == {n: batches.bucket_lengths(lengths).count(n) for n in
                                 (256, 512, 1024)}
  capped = plan(lengths=(100, 5000), padding="buckets")   # truncated at seq_len
  assert capped.padded_lengths == {128: 1, 2048: 1}
  with pytest.raises(ValueError, match="unknown plan.padding 'pack'"):
    plan(lengths=lengths, padding="pack")


def test_analytic_logits_follow_the_loss_chunk_setting():
  from lib.models.chunked import LOSS_CHUNK_TOKENS
  acts = {c: memory_plan.compute(_config(overrides=SMALL, trainer="sft", rows=4, seq_len=1024,
                                         loss_chunk_tokens=c), compile_step=False)
          .breakdown["activations"] for c in (0, 512, -1)}
  # three float32 [tokens, V] buffers: 4 x 1024 tokens unchunked, one 512-token chunk chunked
  assert acts[0] - acts[512] == 3 * 4 * 512 * (4 * 1024 - 512)
  assert acts[-1] == acts[0] - 3 * 4 * 512 * (4 * 1024 - LOSS_CHUNK_TOKENS)   # the default


def test_a_bf16_rollout_halves_the_kv_cache_and_adds_its_weight_copy():
  kw = dict(trainer="grpo", rows=8, seq_len=256, response_len=64, reference=True)
  f32 = memory_plan.compute(_config(overrides=SMALL, **kw), compile_step=False).breakdown
  b16 = memory_plan.compute(_config(overrides=SMALL, rollout_dtype="bfloat16", **kw),
                            compile_step=False).breakdown
  assert "rollout_weights" not in f32 and b16["rollout_weights"] == f32["params"] // 2
  assert b16["kv_cache"] * 2 == f32["kv_cache"] == 2 * 2 * 32 * 8 * 256 * 4 * 2   # 2 layers


def test_a_bf16_reference_halves_the_reference_line():
  from configs.wm import train as wm_train
  kw = dict(trainer="grpo", rows=8, seq_len=256, response_len=64, reference=True)
  f32 = memory_plan.compute(_config(overrides=SMALL, **kw), compile_step=False).breakdown
  b16 = memory_plan.compute(_config(overrides=SMALL, reference_dtype="bfloat16", **kw),
                            compile_step=False).breakdown
  assert 2 * b16["reference"] == f32["reference"] == f32["params"]
  wm = wm_train.get_config("scale=paper,env=alfworld,condition=OPSD-GT")   # the teacher too
  assert wm.opsd.frozen_dtype == wm.plan.reference_dtype == "bfloat16"
  assert wm_train.get_config("debug=True").plan.reference_dtype == ""


def test_paper_presets_micro_batch_as_the_papers_do():
  from configs.conpact import train as conpact_train
  from configs.gencoord import learned
  from configs.wm import train as wm_train
  gc = learned.get_config("scale=paper")              # micro 4 x accumulation 4 = 16
  assert (gc.plan.rows, gc.plan.micro_rows, gc.train.accum_steps) == (16, 4, 4)
  assert gc.plan.padding == "longest"
  cp = conpact_train.get_config("scale=paper")        # one row per device per micro-batch
  assert (cp.plan.rows, cp.plan.micro_rows) == (8, 1)
  cp.mesh.fsdp = 8
  assert cp.plan.micro_rows == 8
  for env in ("alfworld", "scienceworld"):            # Table 6: one response per GPU
    for cond in ("GRPO-GT", "OPSD-GT"):
      wm = wm_train.get_config(f"scale=paper,env={env},condition={cond}")
      block = wm.opsd if cond == "OPSD-GT" else wm.grpo
      assert block.micro_batch == wm.plan.micro_rows == 1
      wm.mesh.fsdp = 16
      assert block.micro_batch == wm.plan.micro_rows == 16
  assert wm_train.get_config("debug=True").grpo.micro_batch == 0


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


# Experiments that train a model (each config of theirs must plan; tests/experiments covers them).
TRAINING_EXPERIMENTS = {"train_sft", "train_grpo", "train_opsd", "gencoord/learned",
                        "conpact/train", "conpact/study", "wm/train", "wm/demo", "wm/study"}


def test_every_training_config_has_a_plan():
  """`launch.py --plan` works for every config in configs/ whose experiment trains: each has a
  `plan` block, and its analytic plan computes (the compiled ones are tested above and below)."""
  planned = {}
  for path in sorted(glob.glob(os.path.join(ROOT, "configs", "**", "*.py"), recursive=True)):
    module = importlib.import_module(os.path.relpath(path, ROOT)[:-3].replace(os.sep, "."))
    if not hasattr(module, "get_config"):
      continue
    for arg in ("", "debug=True"):
      c = module.get_config(arg)
      if c.experiment in TRAINING_EXPERIMENTS:
        assert "plan" in c, f"{path}:{arg} ({c.experiment}) has no plan block"
        plan = memory_plan.compute(c, compile_step=False)
        assert plan.per_device_bytes > 0 and plan.breakdown["params"] > 0
        planned[f"{os.path.relpath(path, ROOT)}:{arg}"] = c.experiment
  assert set(planned.values()) == TRAINING_EXPERIMENTS, planned


def test_paper_scale_configs():
  from configs.conpact import train as conpact_train
  from configs.gencoord import learned
  for config, preset in ((conpact_train.get_config("scale=paper"), "qwen3-8b"),
                         (learned.get_config("scale=paper"), "qwen3.5-0.8b")):
    assert config.model.preset == preset and config.model.remat == "full"
    assert config.model.dtype == "bfloat16" and config.plan.trainer == "sft"
  assert learned.get_config("scale=paper").train.batch == 16 == learned.get_config(
      "scale=paper").plan.rows
  default = conpact_train.get_config("").plan          # the tiny role's step, batch x max_len
  assert (default.rows, default.seq_len, default.trainer) == (8, 4096, "sft")
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
