"""The projection matmul y = x @ w of every Dense layer, with a weight gradient laid out for CPU.

Forward and gradients are the ordinary ones:

    y  = x @ w                  x [..., in], w [in, out]
    dx = dy @ wᵀ
    dw = Σ_n x[n]ᵀ dy[n]        summed over the N = prod(leading dims) rows

Only how dw is computed on XLA:CPU differs. The CPU matmul kernels (YNNPACK) read their operands
with the contracted axis contiguous, so dw, contracted over the N rows, needs xᵀ or dyᵀ written out
first. Left to itself, XLA chose to transpose dy and fused that transpose into dy's producer (the
SwiGLU backward, the attention output's gradient), where the strided write runs far below memory
speed: 24% of the quickstart's SFT step (README, "Quickstart wall time"). Here the backward
transposes the narrower of x and dy itself, behind an optimization barrier so the simplifier cannot
fold the transpose back into the dot: a plain copy of N x min(in, out) values. Measured on 2
quiet cores: the quickstart's SFT step 0.19-0.21 -> ~0.17 s, the Qwen3 20M 4x128 SFT update from
0.78x to 0.95x of PyTorch eager (README, Benchmarks).
On other backends (cuBLAS and TPU matmuls take transposed operands natively) dw is a plain einsum.
"""
import jax
import jax.numpy as jnp


@jax.custom_vjp
def dense_matmul(x: jax.Array, w: jax.Array) -> jax.Array:
  """x [..., in] @ w [in, out] -> [..., out] (see the module docstring for the backward)."""
  return x @ w


def _forward(x, w):
  return x @ w, (x, w)


def _backward(residuals, dy):
  x, w = residuals
  dx = (dy @ w.T).astype(x.dtype)
  if jax.default_backend() != "cpu":
    return dx, jnp.einsum("...i,...o->io", x, dy).astype(w.dtype)
  rows_x, rows_dy = x.reshape(-1, x.shape[-1]), dy.reshape(-1, dy.shape[-1])
  if rows_x.shape[1] <= rows_dy.shape[1]:
    dw = jax.lax.optimization_barrier(rows_x.T) @ rows_dy
  else:       # transposing the weight-sized [out, in] result is cheaper than the wide x
    dw = (jax.lax.optimization_barrier(rows_dy.T) @ rows_x).T
  return dx, dw.astype(w.dtype)


dense_matmul.defvjp(_forward, _backward)
