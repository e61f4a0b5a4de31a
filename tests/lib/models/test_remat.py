"""Per-layer rematerialisation (lib/models/remat.py) changes memory, never the numbers: the same
loss and gradients as the plain stack, through the trainers' `nnx_apply_fn`; and it really
inserts checkpoints into the traced program."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from lib import models
from lib.models.logprobs import token_logprobs
from lib.train.state import nnx_apply_fn


def _loss_and_grads(preset: str, policy: str):
  config = models.preset(preset)
  model = models.set_remat(models.build(config, rngs=nnx.Rngs(0)), policy)
  apply_fn, params = nnx_apply_fn(model)
  rng = np.random.default_rng(0)
  ids = jnp.asarray(rng.integers(3, 100, (2, 9)), jnp.int32)
  mask = jnp.asarray(np.arange(9)[None] >= np.array([[0], [3]]), jnp.int32)   # left padding

  def loss(p):
    logp = token_logprobs(apply_fn(p, ids, mask)[:, :-1], ids[:, 1:])
    return -(logp * mask[:, 1:]).sum() / mask[:, 1:].sum()

  traced = jax.jit(jax.value_and_grad(loss)).trace(params)
  value, grads = traced.lower().compile()(params)
  return float(value), grads, str(traced.jaxpr)


# Qwen35 inherits Qwen's layer loop (`_run_layers`), so its DeltaNet layers take the same path;
# its compile is ~3x slower on CPU, so CI checks the Qwen3 stack with both policies.
@pytest.mark.parametrize("preset,policies", [("qwen3-tiny", ("full", "dots"))])
def test_remat_gives_same_loss_and_gradients(preset, policies):
  base, g0, jaxpr0 = _loss_and_grads(preset, "none")
  assert "checkpoint" not in jaxpr0 and "remat" not in jaxpr0
  for policy in policies:
    value, g1, jaxpr1 = _loss_and_grads(preset, policy)
    assert "checkpoint" in jaxpr1 or "remat" in jaxpr1    # the layers really are checkpointed
    np.testing.assert_allclose(value, base, rtol=1e-6)
    for a, b in zip(jax.tree.leaves(g0), jax.tree.leaves(g1)):
      np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-4, atol=1e-6)


def test_unknown_policy_is_one_line_error():
  with pytest.raises(ValueError, match="unknown remat policy 'some'; valid: none, full, dots"):
    models.set_remat(models.build(models.preset("qwen3-tiny")), "some")
