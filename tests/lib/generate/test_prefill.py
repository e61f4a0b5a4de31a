"""lib/generate/prefill.py through `sampling.generate`: the row-chunked prefill against the one-pass
prefill (float32, within rounding), and sampling from a bfloat16 copy of the weights against the
float32 weights (greedy tokens and log-probs within bf16 tolerance, a bf16 KV cache)."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from lib import models
from lib.generate import prefill as prefill_lib, sampling

SMALL = dict(vocab_size=256, hidden_size=64, intermediate_size=128, num_layers=2, num_heads=4,
             num_kv_heads=2, head_dim=16)


@pytest.fixture(scope="module")
def model():
  return models.build(models.preset("qwen3-tiny", **SMALL), rngs=nnx.Rngs(0))


def _prompts(lengths, seed=0):
  rng = np.random.default_rng(seed)
  return sampling.left_pad([rng.integers(3, 200, n).tolist() for n in lengths])


def _run_prefill(model, ids, mask, rows):
  graphdef, state = nnx.split(model)

  @jax.jit
  def run(state, ids, mask):
    m = nnx.merge(graphdef, state)
    return prefill_lib.prefill(m, m.init_cache(ids.shape[0], ids.shape[1] + 4), ids, mask, rows)
  return run(state, jnp.asarray(ids), jnp.asarray(mask))


def test_row_chunked_prefill_equals_one_pass(model):
  ids, mask = _prompts([3, 9, 5, 12, 7, 2])
  whole_logits, whole_cache = _run_prefill(model, ids, mask, 0)
  # Not bit-equal: XLA's CPU matmuls block [rows, ...] differently from [B, ...] (measured: at most
  # 1.8e-7 apart, float32 rounding); the slot mask and write index are equal.
  for rows in (1, 2, 3):
    logits, cache = _run_prefill(model, ids, mask, rows)
    np.testing.assert_allclose(np.asarray(logits), np.asarray(whole_logits), rtol=1e-5, atol=1e-6)
    for a, b in zip(jax.tree.leaves(cache), jax.tree.leaves(whole_cache)):
      if a.dtype == jnp.float32:
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)
      else:
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
  assert int(cache.index) == ids.shape[1]
  with pytest.raises(ValueError, match="prefill_rows=4 must divide the batch of 6"):
    _run_prefill(model, ids, mask, 4)


def test_generate_with_prefill_rows_gives_the_same_tokens_and_logprobs(model):
  ids, mask = _prompts([4, 11, 6, 8])
  key = jax.random.key(3)
  base = sampling.generate(*nnx.split(model), ids, mask, key, max_new_tokens=5)
  chunked = sampling.generate(*nnx.split(model), ids, mask, key, max_new_tokens=5, prefill_rows=2)
  np.testing.assert_array_equal(np.asarray(chunked.tokens), np.asarray(base.tokens))
  np.testing.assert_allclose(np.asarray(chunked.logprobs), np.asarray(base.logprobs), rtol=1e-5,
                             atol=1e-6)


def test_bf16_copy_has_bf16_params_and_float32_tables(model):
  graphdef, state = prefill_lib.rollout_weights(*nnx.split(model), "bfloat16")
  params = nnx.state(nnx.merge(graphdef, state), nnx.Param)
  assert {x.dtype for x in jax.tree.leaves(params)} == {jnp.dtype("bfloat16")}
  rest = [x for x in jax.tree.leaves(state) if x.dtype != jnp.bfloat16]
  assert len(jax.tree.leaves(state)) == len(jax.tree.leaves(nnx.state(model)))
  assert all(x.dtype == jnp.float32 for x in rest if jnp.issubdtype(x.dtype, jnp.floating))
  # the master weights are untouched
  assert {x.dtype for x in jax.tree.leaves(nnx.state(model, nnx.Param))} == {jnp.dtype("float32")}
  cache = nnx.merge(graphdef, state).init_cache(2, 8, jnp.bfloat16)
  assert cache.layers[0].k.dtype == jnp.bfloat16


def test_sampling_from_a_bf16_copy_matches_float32_within_bf16_tolerance():
  # Large weights make next-token distributions peaky, so greedy choices are not decided by
  # bf16 rounding (as test_sampling's `_peaky`).
  m = models.build(models.preset("qwen3-tiny", **SMALL), rngs=nnx.Rngs(1))
  nnx.update(m, jax.tree.map(lambda x: 8.0 * x, nnx.state(m, nnx.Param)))
  ids, mask = _prompts([5, 9, 3, 7], seed=1)
  f32 = sampling.generate(*nnx.split(m), ids, mask, jax.random.key(0), max_new_tokens=6,
                          temperature=0.0)
  b16 = sampling.generate(*nnx.split(m), ids, mask, jax.random.key(0), max_new_tokens=6,
                          temperature=0.0, weights_dtype="bfloat16")
  tokens32, tokens16 = np.asarray(f32.tokens), np.asarray(b16.tokens)
  # the first tokens follow from the same prompt; later ones may diverge only after a near tie
  np.testing.assert_array_equal(tokens16[:, 0], tokens32[:, 0])
  assert (tokens16 == tokens32).mean() >= 0.75, (tokens16, tokens32)
  same = np.cumprod(tokens16 == tokens32, axis=1).astype(bool)   # up to the first divergence
  lp32, lp16 = np.asarray(f32.logprobs)[same], np.asarray(b16.logprobs)[same]
  # bf16 keeps 8 significant bits: on logits of magnitude ~30 (these weights) one logit moves by
  # up to ~0.12, and a log-prob by a few of those
  np.testing.assert_allclose(lp16, lp32, atol=0.3)
  assert np.median(np.abs(lp16 - lp32)) < 0.05


def test_row_chunked_prefill_shrinks_the_rollouts_temporaries():
  # The sampler's compiled program (as `lib.plan.rollout_plan` lowers it, CPU compiler): 16 rows
  # of 512-token prompts, 8 heads, score tensors [rows, heads, P, P] float32 = 128 MiB for all
  # rows. Measured: 293 MiB of temporaries at once, 102 MiB in chunks of 4 rows.
  from lib.parallel import sharding
  from lib.plan import memory_plan, rollout_plan
  from lib.run.config_blocks import model_block
  arch = memory_plan.arch_config(model_block(preset="qwen3-tiny", overrides=dict(
      SMALL, hidden_size=256, intermediate_size=512, num_heads=8, head_dim=32)))
  abstract = memory_plan.abstract_model(arch)
  params = jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype),
                        nnx.state(abstract, nnx.Param))
  mesh = sharding.make_mesh(1, 1)
  temp = {rows: rollout_plan.compile_rollout(
      abstract, params, sharding.state_shardings(params, mesh), mesh, rows=16, prompt_len=512,
      new_tokens=4, prefill_rows=rows).memory_analysis().temp_size_in_bytes for rows in (0, 4)}
  scores = 16 * 8 * 512 * 512 * 4
  assert temp[0] > scores and temp[4] < temp[0] - scores / 2, temp
