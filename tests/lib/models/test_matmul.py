"""lib/models/matmul.py: dense_matmul's custom backward equals autodiff of the plain matmul."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lib.models.matmul import dense_matmul


def _plain_vjp(x, w, dy):
  _, vjp = jax.vjp(lambda a, b: a @ b, x, w)
  return vjp(dy)


@pytest.mark.parametrize("din,dout", [(8, 24), (24, 8), (16, 16)])   # x narrower, dy narrower, equal
def test_gradients_equal_autodiff_of_x_at_w(din, dout):
  kx, kw, kd = jax.random.split(jax.random.key(0), 3)
  x = jax.random.normal(kx, (2, 5, din))            # leading dims: the rows are flattened
  w = jax.random.normal(kw, (din, dout))
  dy = jax.random.normal(kd, (2, 5, dout))
  y, vjp = jax.vjp(dense_matmul, x, w)
  np.testing.assert_allclose(y, x @ w, rtol=1e-6)
  dx, dw = jax.jit(vjp)(dy)
  dx_ref, dw_ref = _plain_vjp(x, w, dy)
  np.testing.assert_allclose(dx, dx_ref, rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(dw, dw_ref, rtol=1e-5, atol=1e-5)
  # the weight gradient, independently: the sum over rows of outer products
  want = np.einsum("bti,bto->io", np.asarray(x, np.float64), np.asarray(dy, np.float64))
  np.testing.assert_allclose(dw, want, rtol=1e-5, atol=1e-4)


def test_bfloat16_gradients_keep_their_dtypes():
  x = jax.random.normal(jax.random.key(1), (4, 8), jnp.bfloat16)
  w = jax.random.normal(jax.random.key(2), (8, 12), jnp.bfloat16)
  dx, dw = jax.grad(lambda a, b: dense_matmul(a, b).astype(jnp.float32).sum(), (0, 1))(x, w)
  ref_dx, ref_dw = jax.grad(lambda a, b: (a @ b).astype(jnp.float32).sum(), (0, 1))(x, w)
  assert dx.dtype == jnp.bfloat16 and dw.dtype == jnp.bfloat16
  np.testing.assert_allclose(np.float32(dx), np.float32(ref_dx), rtol=2e-2, atol=2e-2)
  np.testing.assert_allclose(np.float32(dw), np.float32(ref_dw), rtol=2e-2, atol=2e-2)


def test_cpu_backward_transposes_behind_a_barrier():
  """On CPU the weight gradient takes the explicit-transpose path (the optimization barrier keeps
  XLA from folding the transpose back into the dot); the gradient itself is checked above."""
  x, w = jnp.ones((6, 4)), jnp.ones((4, 10))
  jaxpr = str(jax.make_jaxpr(jax.grad(lambda a, b: dense_matmul(a, b).sum(), (0, 1)))(x, w))
  assert jax.default_backend() == "cpu"
  assert "optimization_barrier" in jaxpr


def test_accelerator_backward_is_a_plain_einsum_with_the_same_gradients(monkeypatch):
  """The branch GPUs and TPUs take (cuBLAS and TPU matmuls read transposed operands natively)."""
  x = jax.random.normal(jax.random.key(3), (3, 7))
  w = jax.random.normal(jax.random.key(4), (7, 9))
  monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
  grad = jax.grad(lambda a, b: (dense_matmul(a, b) ** 2).sum(), (0, 1))
  assert "optimization_barrier" not in str(jax.make_jaxpr(grad)(x, w))
  dx, dw = grad(x, w)
  ref_dx, ref_dw = jax.grad(lambda a, b: ((a @ b) ** 2).sum(), (0, 1))(x, w)
  np.testing.assert_allclose(dx, ref_dx, rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(dw, ref_dw, rtol=1e-5, atol=1e-5)
