"""lib/plan/roofline.py: the probes give positive finite figures that scale as the work does, and
the
bytes-per-decode-step and FLOPs-per-update formulas match hand computations on tiny configs."""
import math

import jax
import ml_collections
import numpy as np
import pytest
from flax import nnx

from lib.models import model_setup
from lib.models import preset
from lib.models.qwen3_5.config import FULL, LINEAR
from lib.models.qwen3_5.model import Qwen35
from lib.plan import roofline
from lib.run import config_blocks

MIB = 2**20


def _ticking(step):
  """A clock that advances `step` seconds per call: every timed call then lasts exactly `step`."""
  now = [0.0]

  def clock():
    now[0] += step
    return now[0]
  return clock


def _nnx_param_count(model):
  return sum(int(np.prod(x.shape)) for x in jax.tree.leaves(nnx.state(model, nnx.Param)))


def test_memory_bandwidth_is_positive_and_finite():
  mem = roofline.memory_bandwidth(8 * MIB, reps=2)
  for key in ("gb_s", "copy_gb_s", "triad_gb_s"):
    assert math.isfinite(mem[key]) and 0.05 < mem[key] < 100_000, (key, mem[key])
  assert mem["gb_s"] == max(mem["copy_gb_s"], mem["triad_gb_s"])
  assert mem["array_bytes"] == 8 * MIB and mem["threads"] >= 1
  # 8 MiB never exceeds 4x a real L3, and the note says the figure is then a cache bandwidth
  assert mem["arrays_exceed_l3"] in (False, None)
  if mem["arrays_exceed_l3"] is False:
    limits = {"memory": mem, "matmul": roofline.matmul_peak(32, reps=1)}
    assert "partly a cache bandwidth" in roofline.note(limits)


def test_memory_bandwidth_counts_stream_bytes():
  # every timed call lasts 0.5 s: copy moves 2 arrays, the two-pass numpy triad 5
  for size in (1 * MIB, 2 * MIB):
    mem = roofline.memory_bandwidth(size, reps=3, threads=2, clock=_ticking(0.5))
    assert mem["copy_gb_s"] == pytest.approx(2 * size / 0.5 / 1e9)
    assert mem["triad_gb_s"] == pytest.approx(5 * size / 0.5 / 1e9)
  with pytest.raises(ValueError, match="reps"):
    roofline.memory_bandwidth(MIB, reps=0)


def test_default_array_bytes_exceeds_l3(monkeypatch):
  assert roofline.default_array_bytes(300 * MIB) == 1200 * MIB
  assert roofline.default_array_bytes(8 * MIB) == 256 * MIB      # floor for small caches
  monkeypatch.setattr(roofline, "l3_cache_bytes", lambda: None)
  assert roofline.default_array_bytes() == 1024 * MIB


def test_matmul_peak_scales_with_the_work():
  small, large = (roofline.matmul_peak(n, reps=3) for n in (128, 512))
  for mm, n in ((small, 128), (large, 512)):
    assert mm["flops"] == 2 * n**3 and math.isfinite(mm["gflop_s"]) and mm["gflop_s"] > 0
    assert mm["gflop_s"] == pytest.approx(mm["flops"] / mm["seconds"] / 1e9)
  assert large["seconds"] > 2 * small["seconds"]     # 64x the FLOPs can not run in twice the time
  fixed = roofline.matmul_peak(64, reps=2, clock=_ticking(0.25))
  assert fixed["gflop_s"] == pytest.approx(2 * 64**3 / 0.25 / 1e9)


def test_probe_reads_the_config_block():
  block = ml_collections.ConfigDict(dict(stream_mib=2, matmul_n=64, reps=1))
  limits = roofline.probe(block)
  assert limits["memory"]["array_bytes"] == 2 * MIB and limits["matmul"]["n"] == 64
  assert "GB/s" in roofline.note(limits) and "GFLOP/s" in roofline.note(limits)


def _qwen3_tiny():
  model, cfg, _ = model_setup.build_model(config_blocks.model_block(preset="qwen3-tiny"), seed=0)
  return model, cfg


def test_decode_bytes_qwen3_tiny_by_hand():
  model, cfg = _qwen3_tiny()
  # qwen3-tiny: vocab 128, hidden 32, MLP 64, 2 layers, 4 q / 2 kv heads of 16, untied head
  per_layer = 32 * 64 + 2 * 32 * 32 + 64 * 32 + 2 * 16 + 3 * 32 * 64 + 2 * 32
  params = 2 * 128 * 32 + 2 * per_layer + 32
  assert _nnx_param_count(model) == params == cfg.num_params()
  batch, prompt, new = 3, 16, 8
  got = roofline.decode_bytes(model, cfg, batch=batch, prompt_len=prompt, new_tokens=new)
  weights = 4 * (params - 128 * 32 + batch * 32)       # float32; the table read for 3 rows only
  slot = 2 * 2 * batch * 2 * 16 * 4 + batch            # K+V of 2 layers, float32; bool slot mask
  context = prompt + (new + 1) / 2                      # steps attend over 17 .. 24 slots
  assert got["weight_bytes"] == weights
  assert got["cache_slot_bytes"] == slot and got["cache_fixed_bytes"] == 4   # int32 write index
  assert got["mean_context"] == context
  assert got["bytes_per_step"] == pytest.approx(weights + 4 + slot * context)


def test_decode_bytes_tied_head_reads_the_whole_table():
  model, cfg, _ = model_setup.build_model(config_blocks.model_block(preset="qwen2-tiny"), seed=0)
  assert cfg.tie_word_embeddings
  got = roofline.decode_bytes(model, cfg, batch=2, prompt_len=4, new_tokens=2)
  assert got["weight_bytes"] == 4 * _nnx_param_count(model) == 4 * cfg.num_params()


def test_decode_bytes_qwen3_5_counts_recurrent_state_whole():
  cfg = preset("qwen3.5-tiny")
  assert cfg.layer_types == (LINEAR, FULL, LINEAR, FULL)
  model = nnx.eval_shape(lambda: Qwen35(cfg, rngs=nnx.Rngs(0)))   # abstract: shapes only
  batch = 2
  got = roofline.decode_bytes(model, cfg, batch=batch, prompt_len=16, new_tokens=4)
  conv_dim = 2 * 2 * 8 + 4 * 8                          # q, k (2 heads x 8) and v (4 heads x 8)
  linear = batch * (3 * conv_dim + 4 * 8 * 8) * 4       # conv taps - 1 and the [4, 8, 8] state
  assert got["cache_fixed_bytes"] == 2 * linear + 4
  assert got["cache_slot_bytes"] == 2 * 2 * batch * 2 * 16 * 4 + batch
  assert got["weight_bytes"] == 4 * (_nnx_param_count(model) - (128 - batch) * 32)


def test_update_flops_qwen3_tiny_by_hand():
  model, cfg = _qwen3_tiny()
  n = roofline.matmul_params(model, cfg)
  assert n == _nnx_param_count(model) - 128 * 32       # the untied input table is a gather
  batch, seq = 4, 32
  got = roofline.update_flops(matmul_params=n, layers=2, heads=4, head_dim=16, batch=batch,
                              seq_len=seq)
  dense = 6 * n * batch * seq                          # 2 N forward + 4 N backward per token
  # 2 layers x (QK^T + AV: 2 x 2 H D per visible pair) x T^2 / 2 causal pairs x 3 (fwd + bwd)
  attention = 2 * (2 * 2 * 4 * 16) * (batch * seq**2 // 2) * 3
  assert got == dense + attention


def test_prefill_flops_by_hand():
  # 1,000 matmul weights of which 300 in the head, 2 attention layers x 4 heads x 16, 3 rows x 8
  got = roofline.prefill_flops(matmul_params=1000, head_params=300, attention_layers=2, heads=4,
                               head_dim=16, batch=3, prompt_len=8)
  body = 2 * 700 * 3 * 8                       # every non-head weight, every prompt token
  head = 2 * 300 * 3                           # the last position of each row only
  attention = 2 * (2 * 2 * 4 * 16) * 3 * (8 * 8 // 2)   # QK^T + AV over P^2 / 2 pairs
  assert got == body + head + attention
