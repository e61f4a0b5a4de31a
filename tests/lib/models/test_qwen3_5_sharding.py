"""Qwen3.5 on a 2 data x 4 model mesh of fake CPU devices: logits and greedy samples equal unsharded.

Runs in a subprocess: the device count is fixed when JAX initialises (see test_model_sharding.py).
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
    model = models.build(models.preset("qwen3.5-tiny", deltanet_chunk=8), rngs=nnx.Rngs(0))
    # Spread the logits: the projections' 0.02 init leaves them nearly flat.
    scaled = jax.tree.map(lambda x: 8.0 * x if x.ndim == 2 else x, nnx.state(model, nnx.Param))
    nnx.update(model, scaled)
    forward = nnx.jit(lambda m, ids, mask: m(ids, mask))
    rng = np.random.default_rng(0)
    ids, mask = sampling.left_pad([rng.integers(0, 128, n).tolist() for n in (3, 7, 12, 9)])
    kwargs = dict(max_new_tokens=5, temperature=0.0)
    ref_logits = np.asarray(forward(model, jnp.asarray(ids), jnp.asarray(mask)))
    ref = sampling.generate(*nnx.split(model), ids, mask, jax.random.key(1), **kwargs)

    mesh = models.make_mesh(data=2, model=4)
    models.shard_model(model, mesh)
    kernel = model.layers[0].linear_attn.in_proj.kernel[...]
    assert kernel.sharding.spec == jax.sharding.PartitionSpec(None, "model"), kernel.sharding
    assert kernel.addressable_shards[0].data.shape == (32, 26)  # 104 columns over 4 model shards
    logits = forward(model, models.shard_batch(jnp.asarray(ids), mesh),
                     models.shard_batch(jnp.asarray(mask), mesh))
    real = mask.astype(bool)
    np.testing.assert_allclose(np.asarray(logits)[real], ref_logits[real], rtol=1e-4, atol=1e-3)
    out = sampling.generate(*nnx.split(model), ids, mask, jax.random.key(1), mesh=mesh, **kwargs)
    np.testing.assert_array_equal(np.asarray(out.tokens), np.asarray(ref.tokens))
    print("SHARDING-OK")
""")


def test_sharded_qwen3_5_equals_unsharded():
  root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
  env = dict(os.environ, JAX_PLATFORMS="cpu", PYTHONPATH=root,
             XLA_FLAGS=os.environ.get("XLA_FLAGS", "") +
             " --xla_force_host_platform_device_count=8")
  result = subprocess.run([sys.executable, "-c", CHECK], cwd=root, env=env, capture_output=True,
                          text=True, timeout=600)
  assert result.returncode == 0, result.stderr[-4000:]
  assert "SHARDING-OK" in result.stdout
