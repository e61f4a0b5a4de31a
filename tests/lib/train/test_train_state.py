"""lib/train/state.py: map_row_chunks (the chunked scoring passes of GRPO and OPSD)."""
import jax
import jax.numpy as jnp
import numpy as np

from lib.train.state import map_row_chunks


def _rowwise(x, y):
  # a pytree of row-wise outputs with different trailing shapes
  return {"sum": (x * y[:, :, None]).sum(-1), "first": x[:, 0]}


def test_chunks_give_what_one_call_gives_and_run_in_chunks():
  rng = np.random.default_rng(0)
  x = jnp.asarray(rng.normal(size=(12, 5, 3)).astype(np.float32))
  y = jnp.asarray(rng.normal(size=(12, 5)).astype(np.float32))
  whole = _rowwise(x, y)
  for micro in (1, 3, 4, 6, 0, 12, 24, 5):       # 0, >= rows, non-divisor: one call
    out = jax.jit(lambda a, b, m=micro: map_row_chunks(_rowwise, m, a, b))(x, y)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-6), out, whole)
  # the chunked program really maps over chunks: the function sees [micro, ...] rows
  seen = []
  map_row_chunks(lambda a: seen.append(a.shape) or a, 4, x)
  assert seen == [(4, 5, 3)]
  seen.clear()
  map_row_chunks(lambda a: seen.append(a.shape) or a, 5, x)
  assert seen == [(12, 5, 3)]
