"""Sharded (2 data x 4 model fake CPU devices) logits and samples equal unsharded ones.

The check runs in a subprocess: the device count is fixed when JAX initialises, and forcing 8 host
devices in the pytest process would change every other test.
"""
import os
import subprocess
import sys
import textwrap

CHECK = textwrap.dedent("""
    import jax, jax.numpy as jnp, numpy as np
    from flax import nnx
    from lib import models
    from lib.generate import sampling
    assert jax.device_count() == 8, jax.devices()
    model = models.build(models.preset("qwen3-tiny"), rngs=nnx.Rngs(0))
    nnx.update(model, jax.tree.map(lambda x: 8.0 * x, nnx.state(model, nnx.Param)))
    forward = nnx.jit(lambda m, ids, mask: m(ids, mask))
    rng = np.random.default_rng(0)
    ids, mask = sampling.left_pad([rng.integers(0, 128, n).tolist() for n in (3, 7, 5, 9)])
    kwargs = dict(max_new_tokens=5, temperature=1.0, top_k=30)
    ref_logits = np.asarray(forward(model, jnp.asarray(ids), jnp.asarray(mask)))
    ref = sampling.generate(*nnx.split(model), ids, mask, jax.random.key(1), **kwargs)

    mesh = models.make_mesh(data=2, model=4)
    models.shard_model(model, mesh)
    kernel = model.layers[0].attn.qkv_proj.kernel[...]
    assert kernel.sharding.spec == jax.sharding.PartitionSpec(None, "model"), kernel.sharding
    assert len(kernel.addressable_shards) == 8
    assert kernel.addressable_shards[0].data.shape == (32, 32)  # 128 q/k/v columns over 4 shards
    sharded_ids = models.shard_batch(jnp.asarray(ids), mesh)
    sharded_mask = models.shard_batch(jnp.asarray(mask), mesh)
    logits = forward(model, sharded_ids, sharded_mask)
    # Sharded matmuls sum in another order: float32 rounding grows with the logits (up to ~30 here).
    np.testing.assert_allclose(np.asarray(logits), ref_logits, rtol=1e-4, atol=1e-3)
    out = sampling.generate(*nnx.split(model), ids, mask, jax.random.key(1), mesh=mesh, **kwargs)
    np.testing.assert_array_equal(np.asarray(out.tokens), np.asarray(ref.tokens))
    np.testing.assert_allclose(np.asarray(out.logprobs), np.asarray(ref.logprobs), atol=1e-3)
    np.testing.assert_array_equal(np.asarray(out.lengths), np.asarray(ref.lengths))
    # load_pretrained(mesh=...) places each tensor straight onto its sharding.
    import tempfile
    with tempfile.TemporaryDirectory() as ckpt:
      models.save_pretrained(model, models.preset("qwen3-tiny"), ckpt)
      loaded, _ = models.load_pretrained(ckpt, mesh=mesh)
    up = loaded.layers[1].mlp.gate_up_proj.kernel[...]
    assert up.sharding.spec == jax.sharding.PartitionSpec(None, "model"), up.sharding
    np.testing.assert_allclose(np.asarray(forward(loaded, sharded_ids, sharded_mask)), ref_logits,
                               rtol=1e-4, atol=1e-3)
    print("SHARDING-OK")
""")


def test_sharded_logits_and_samples_equal_unsharded():
  root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
  env = dict(os.environ, JAX_PLATFORMS="cpu", PYTHONPATH=root,
             XLA_FLAGS=os.environ.get("XLA_FLAGS", "") +
             " --xla_force_host_platform_device_count=8")
  result = subprocess.run([sys.executable, "-c", CHECK], cwd=root, env=env, capture_output=True,
                          text=True, timeout=600)
  assert result.returncode == 0, result.stderr[-4000:]
  assert "SHARDING-OK" in result.stdout
