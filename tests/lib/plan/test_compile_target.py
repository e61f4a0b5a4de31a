"""lib/plan/compile_target.py and `memory_plan.compute` with `plan.target=tpu:...`: plans compiled
by
libtpu's compiler for a TPU slice this machine does not have (the `[tpu]` extra, installed by
`[test]`), the target's parsing, the roofline, and `launch.py --plan` for every training config."""
import glob
import importlib
import json
import os
import subprocess
import sys

import ml_collections
import pytest

from launch_server import LaunchServer
from lib.plan import compile_target, memory_plan, plan_table
from lib.run.config_blocks import model_block, plan_block

pytestmark = pytest.mark.long_module(240)

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
V5E = "tpu:v5e:2x2"
# Every matrix has a dimension divisible by 4 and >= 1024 elements, so FSDP over 4 chips splits it.
SMALL = dict(vocab_size=512, hidden_size=128, intermediate_size=256, num_heads=4, num_kv_heads=2,
             head_dim=32, num_layers=4)


# Deep and narrow-vocabulary: the per-layer activations, not the logits, dominate the temporaries.
DEEP = dict(SMALL, num_layers=4, hidden_size=256, intermediate_size=1024, vocab_size=256,
            head_dim=64)


def _config(trainer="sft", remat="none", rows=8, seq_len=256, fsdp=4, arch=SMALL, **plan):
  c = ml_collections.ConfigDict()
  c.experiment = "train_" + trainer
  c.model = model_block(preset="qwen3-tiny", overrides=dict(arch), dtype="bfloat16", remat=remat)
  c.mesh = dict(data=1, fsdp=fsdp)
  c.plan = plan_block(trainer=trainer, rows=rows, seq_len=seq_len, target=V5E,
                      response_len=64 if trainer != "sft" else 0, **plan)
  return c


def test_parse_targets_and_refusals():
  t = compile_target.parse("tpu:v5p:2x2x1")
  assert (t.platform, t.topology, t.chips, t.chip.name) == ("tpu", "v5p:2x2x1", 4, "v5p")
  assert compile_target.parse("tpu:v5e:4x4").chips == 16
  assert compile_target.parse("cpu") == compile_target.Target("cpu")
  for bad, match in (("tpu:v9:2x2", "unknown TPU chip 'v9'"), ("tpu:v5e:2by2", "AxB"),
                     ("tpu:v5e", "AxB"), ("tpu:v5e:0x2", "AxB"), ("mps", "unknown plan.target"),
                     ("gpu:8xH100", "CUDA plugin cannot compile without a GPU")):
    with pytest.raises(ValueError, match=match):
      compile_target.parse(bad)


def test_step_estimate_is_flops_at_peak_plus_decode_reads_at_bandwidth():
  from lib.plan import roofline
  from lib.run.config_blocks import plan_block
  t = compile_target.parse(V5E)
  arch = memory_plan.arch_config(model_block(preset="qwen3-tiny", overrides=dict(SMALL)))
  model = memory_plan.abstract_model(arch)
  p = plan_block(trainer="grpo", rows=8, seq_len=256, response_len=64)
  e = compile_target.step_estimate(t, arch, model, p, "full", params_bytes=10**9,
                                   cache_bytes_per_device=10**6)
  n = roofline.matmul_params(model, arch)
  update = (6 * n * 8 * 256 + 6 * 4 * 4 * 32 * 8 * 256**2) * 4 / 3
  assert e["update_s"] == pytest.approx(update / 4 / 197e12)
  prefill = 2 * (n - 512 * 128) * 8 * 192 + 2 * 512 * 128 * 8 + 2 * 4 * 4 * 32 * 8 * 192**2
  assert e["rollout_s"] == pytest.approx(prefill / 4 / 197e12 + 64 * (10**9 + 10**6) / 819e9)
  assert e["step_s"] == pytest.approx(e["update_s"] + e["rollout_s"])
  sft = compile_target.step_estimate(t, arch, model, plan_block(rows=8, seq_len=256), "none",
                                     params_bytes=0, cache_bytes_per_device=0)
  assert sft["rollout_s"] is None and sft["step_s"] == sft["update_s"]


def test_topology_devices_are_the_named_chips():
  devs = compile_target.devices(compile_target.parse(V5E))
  assert len(devs) == 4 and {d.device_kind for d in devs} == {"TPU v5 lite"}
  assert compile_target.devices(compile_target.parse("cpu")) is None
  # one chip needs chips_per_host_bounds=(1, 1, 1) (libtpu's default 2x2x1 host does not divide it)
  for topology, kind in (("v5e:1x1", "TPU v5 lite"), ("v6e:1x1", "TPU v6 lite"),
                         ("v5p:1x1x1", "TPU v5")):
    one = compile_target.devices(compile_target.parse(f"tpu:{topology}"))
    assert [d.device_kind for d in one] == [kind], topology
  with pytest.raises(ValueError, match="libtpu cannot build this topology"):
    compile_target.devices(compile_target.parse("tpu:v5e:3x5"))


def test_a_second_process_can_plan_while_this_one_holds_libtpu():
  # libtpu's machine-wide lock file would stop the child ("Internal error when accessing libtpu
  # multi-process lockfile"); off a TPU host compile_target lifts it.
  compile_target.devices(compile_target.parse(V5E))
  env = {k: v for k, v in os.environ.items() if k != "ALLOW_MULTIPLE_LIBTPU_LOAD"}
  code = ("from lib.plan import compile_target as c; "
          "print(len(c.devices(c.parse('tpu:v5e:2x2'))))")
  out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=dict(env, PYTHONPATH=ROOT,
                       JAX_PLATFORMS="cpu"), capture_output=True, text=True, timeout=120)
  assert out.returncode == 0 and out.stdout.split()[-1] == "4", out.stderr[-2000:]


def test_without_libtpu_the_target_says_how_to_install_it(monkeypatch):
  import importlib.util
  find = importlib.util.find_spec
  monkeypatch.setattr(importlib.util, "find_spec",
                      lambda name, *a: None if name == "libtpu" else find(name, *a))
  with pytest.raises(ValueError, match=r"needs the TPU compiler: pip install -e '\.\[tpu\]'"):
    compile_target.devices(compile_target.parse(V5E))


def test_sft_arguments_are_the_analytic_state_and_batch():
  plan = memory_plan.compute(_config("sft"))
  assert plan.target == V5E and plan.compiled and plan.mesh == dict(data=1, fsdp=4, model=1)
  assert plan.device_memory_bytes == 16 * 2**30 and plan.fits is True
  b = plan.breakdown
  batch = 3 * 8 * 256 * 4 // 4                     # three int32 [8, 256] arrays split over 4 chips
  analytic = b["params"] + b["optimizer_state"] + batch
  # the step counter and TPU's layout padding of the few unsplit vectors: within 2%
  assert plan.memory_analysis["argument"] == pytest.approx(analytic, rel=0.02), (plan, analytic)
  assert plan.programs["train_step"]["cost"]["flops"] > 0
  assert plan.estimate["update_s"] > 0 and plan.estimate["rollout_s"] is None


def test_tpu_compiler_keeps_remat_recomputation():
  # What the CPU compiler cannot show (docs/gpu.md): with per-layer remat the temporaries hold
  # one layer's recomputed activations instead of all four (measured 54.3 -> 19.7 MiB).
  temp = {r: memory_plan.compute(_config("sft", remat=r, rows=8, seq_len=512, arch=DEEP))
          .memory_analysis["temp"] for r in ("none", "full")}
  assert temp["full"] < 0.5 * temp["none"], temp


def test_grpo_plans_the_train_step_and_the_rollout():
  plan = memory_plan.compute(_config("grpo", rows=8, seq_len=256, reference=True))
  assert set(plan.programs) == {"train_step", "rollout"}
  assert "kv_cache" not in plan.breakdown and plan.breakdown["rollout_program"] > 0
  phases = [plan.programs[k]["phase_bytes"] for k in ("train_step", "rollout")]
  assert plan.per_device_bytes == max(phases)
  # the rollout's program holds the whole KV cache of its 2 rows per chip at least
  cache = 2 * 4 * 2 * 32 * 2 * 256 * 2           # k,v x layers x kv heads x D x rows x S x bf16
  assert plan.breakdown["rollout_program"] >= cache
  assert plan.programs["rollout"]["cost"]["flops"] > 0


def test_a_bf16_rollout_compiles_with_half_the_weights_and_cache():
  # The rollout program's arguments: the weights it samples from, its KV cache and the prompts.
  # From a bf16 copy both halve (measured on this model: 4.04 -> 2.39 MiB of rollout program).
  plans = {d: memory_plan.compute(_config("grpo", rows=8, seq_len=256, reference=True,
                                          rollout_dtype=d, prefill_rows=4 if d else 0))
           for d in ("", "bfloat16")}
  f32, b16 = (plans[d].programs["rollout"]["memory_analysis"]["argument"] for d in plans)
  params = plans[""].breakdown["params"]
  cache = 4 * 2 * 2 * 32 * 2 * 256 * 4        # k,v x layers x kv heads x D x rows x S x float32
  assert f32 - b16 == pytest.approx((params + cache) / 2, rel=0.05), (f32, b16)
  assert plans["bfloat16"].breakdown["rollout_program"] < plans[""].breakdown["rollout_program"]


# libtpu's own words when ConPAct's paper-scale step was compiled for a v5e 2x4.
REFUSAL = ("RESOURCE_EXHAUSTED: Ran out of memory on HBM, the total memory required for HLO "
           "temporaries (18.57G) exceeds available HBM (15.75G).")


def test_out_of_hbm_reads_the_compilers_refusal():
  assert compile_target.out_of_hbm(RuntimeError(REFUSAL)) == (int(18.57 * 2**30),
                                                              int(15.75 * 2**30))
  assert compile_target.out_of_hbm(RuntimeError("INVALID_ARGUMENT: bad sharding")) is None


def test_a_program_the_compiler_refuses_is_a_plan_that_does_not_fit(monkeypatch):
  from jax.errors import JaxRuntimeError
  from lib.plan import rollout_plan

  def refuse(*args, **kw):
    raise JaxRuntimeError(REFUSAL)
  monkeypatch.setattr(rollout_plan, "compile_rollout", refuse)
  plan = memory_plan.compute(_config("grpo"))
  assert plan.fits is False and plan.refused["program"] == "rollout"
  assert plan.breakdown["rollout_temporaries"] == int(18.57 * 2**30)
  assert "step_temporaries" not in plan.breakdown and "kv_cache" not in plan.breakdown
  assert plan.per_device_bytes == sum(plan.breakdown.values())
  assert "refused by the TPU compiler" in plan_table.table(plan)
  json.dumps(plan.to_json(), allow_nan=False)

  def broken(*args, **kw):
    raise JaxRuntimeError("INTERNAL: something else")
  monkeypatch.setattr(rollout_plan, "compile_rollout", broken)
  with pytest.raises(JaxRuntimeError, match="something else"):
    memory_plan.compute(_config("grpo"))


def test_a_mesh_that_is_not_the_slice_is_one_line():
  with pytest.raises(ValueError, match=r"has 4 chips; the mesh data=1 x fsdp=8 uses 8 \(set "
                                       r"--config.mesh.fsdp=4\)"):
    memory_plan.compute(_config("sft", fsdp=8))


@pytest.fixture(scope="module")
def launch():
  server = LaunchServer(dict(os.environ, JAX_PLATFORMS="cpu"))
  yield lambda *args: server.run(*args, timeout=600)
  server.close()


def test_launch_plan_for_a_tpu_slice_for_every_training_config(launch, tmp_path):
  """`--plan --config.plan.target=tpu:v5e:2x2` for every debug training config (tiny models), the
  mesh laid on the slice's 4 chips."""
  done = {}
  for path in sorted(glob.glob(os.path.join(ROOT, "configs", "**", "*.py"), recursive=True)):
    rel = os.path.relpath(path, ROOT)
    module = importlib.import_module(rel[:-3].replace(os.sep, "."))
    if not hasattr(module, "get_config"):
      continue
    c = module.get_config("debug=True")
    if "plan" not in c:
      continue
    wd = tmp_path / rel.replace(os.sep, "_")
    # a config without a mesh block plans the whole slice as FSDP shards
    mesh = ["--config.mesh.fsdp=4"] if "mesh" in c else []
    out = launch(f"--config={rel}:debug=True", f"--workdir={wd}", "--plan",
                 f"--config.plan.target={V5E}", *mesh,
                 f"--config.plan.rows={max(4, c.plan.rows // 4 * 4)}", "--config.plan.micro_rows=0")
    assert out.returncode == 0, (rel, out.stdout[-2000:] + out.stderr[-2000:])
    plan = json.loads((wd / "plan.json").read_text())
    assert plan["target"] == V5E and plan["compiled"] and plan["fits"] in (True, False)
    assert "compiled for tpu:v5e:2x2" in out.stdout and "roofline estimate" in out.stdout
    done[rel] = plan["trainer"]
  assert set(done.values()) == {"sft", "grpo", "opsd"}, done


def test_launch_plan_with_a_gpu_target_is_one_line(launch, tmp_path):
  out = launch("--config=configs/sft_toy.py:debug=True", f"--workdir={tmp_path}", "--plan",
               "--config.plan.target=gpu:8xH100")
  assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr[-2000:]
  assert "CUDA plugin cannot compile without a GPU" in out.stderr
