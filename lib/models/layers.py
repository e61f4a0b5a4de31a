"""Layers every model family shares: annotated parameters, Dense projections (single or fused) and
the SwiGLU MLP.

Fused projections: several projections of the same input run as one matmul (`FusedDense`), one
[in, sum of outs] kernel instead of one kernel each. On XLA:CPU's small shapes and in batch-1
decoding, where each step is a chain of small dependent matmuls, fewer and wider matmuls are
faster. The fused kernel's columns are laid out in `groups` (`group_columns`): group g holds each
part's g-th block of columns in turn. Grouping by kv head (attention) or by hidden unit (the MLP's
gate and up) puts everything one output needs in the same contiguous run of columns, so a "model"
sharding of the columns that splits between groups leaves the split after the matmul local to each
device. `lib.models.qwen.params` maps the fused kernels to and from the checkpoints' separate ones.
"""
import jax
import jax.numpy as jnp
from flax import nnx

from lib.models.matmul import dense_matmul

WEIGHT_INIT = jax.nn.initializers.normal(0.02)  # transformers' initializer_range default
COLUMNS = (None, "model")  # column-parallel kernel: output features sharded over "model"
ROWS = ("model", None)     # row-parallel kernel: input features sharded over "model"


def sharded_param(value, sharding) -> nnx.Param:
  """A parameter annotated with logical axis names; not placed on devices yet.

  Args:
    value: the initial array.
    sharding: one mesh axis name or None per dimension of `value`, e.g. (None, "model").
  Returns:
    An nnx.Param carrying `sharding` as its out_sharding.
  """
  # eager_sharding=False: annotate only; `lib.parallel.placement` places it once a mesh is given.
  return nnx.Param(value, out_sharding=sharding, eager_sharding=False)


def group_columns(parts, groups: int):
  """Joins projections' columns into one array, group by group.

  Args:
    parts: arrays [..., groups * w_p], all with the same leading dims (kernels or biases).
    groups: G, how many blocks each part's columns split into.
  Returns:
    [..., groups * sum(w_p)]: for each group g, part 0's g-th block of w_0 columns, then part 1's
    g-th block, and so on. groups=1 is a plain concatenation.
  """
  lead = parts[0].shape[:-1]
  blocks = [p.reshape(*lead, groups, p.shape[-1] // groups) for p in parts]
  return jnp.concatenate(blocks, axis=-1).reshape(*lead, -1)


def split_columns(fused, widths, groups: int) -> list:
  """The inverse of `group_columns`.

  Args:
    fused: [..., groups * sum(widths)].
    widths: (w_0, w_1, ...), each part's columns per group.
    groups: G.
  Returns:
    [part 0 [..., groups * w_0], part 1 [..., groups * w_1], ...].
  """
  lead = fused.shape[:-1]
  bounds = [sum(widths[:i + 1]) for i in range(len(widths) - 1)]
  blocks = jnp.split(fused.reshape(*lead, groups, sum(widths)), bounds, axis=-1)
  return [b.reshape(*lead, -1) for b in blocks]


class Dense(nnx.Module):
  """y = x @ kernel (+ bias); kernel is [in, out] (the transpose of torch's Linear.weight)."""

  def __init__(self, din, dout, *, bias, sharding, dtype, rngs):
    self.kernel = sharded_param(WEIGHT_INIT(rngs.params(), (din, dout), dtype), sharding)
    self.bias = sharded_param(jnp.zeros((dout,), dtype), sharding[1:]) if bias else None

  def __call__(self, x):
    y = dense_matmul(x, self.kernel[...])     # x @ kernel; its weight gradient suits XLA:CPU
    return y if self.bias is None else y + self.bias[...]


class FusedDense(Dense):
  """Several projections of one input as one Dense; the call returns each projection's output.

  The kernel's columns are `group_columns` of the parts' kernels. Each part's initial kernel is
  drawn as a separate Dense would draw it, in order, so a seed gives the same initial projections
  as separate layers.
  """

  def __init__(self, din, widths, groups, *, bias, sharding, dtype, rngs):
    """A random fused projection.

    Args:
      din: input features.
      widths: each part's output columns per group; part p has groups * widths[p] outputs.
      groups: G, see `group_columns`.
      bias, sharding, dtype, rngs: as `Dense`.
    """
    kernels = [WEIGHT_INIT(rngs.params(), (din, groups * w), dtype) for w in widths]
    self.kernel = sharded_param(group_columns(kernels, groups), sharding)
    dout = groups * sum(widths)
    self.bias = sharded_param(jnp.zeros((dout,), dtype), sharding[1:]) if bias else None
    self.widths, self.groups = tuple(widths), groups

  def __call__(self, x):
    """x [..., in] -> [part 0 [..., groups * widths[0]], part 1, ...]."""
    return split_columns(super().__call__(x), self.widths, self.groups)


class MLP(nnx.Module):
  """SwiGLU: down(silu(gate(x)) * up(x)), gate and up as one matmul (`gate_up_proj`)."""

  def __init__(self, config, *, dtype, rngs):
    """A random MLP.

    Args:
      config: a QwenConfig or Qwen35Config (hidden_size, intermediate_size).
      dtype, rngs: as `Dense`.
    """
    h, f = config.hidden_size, config.intermediate_size
    widths, groups = self.gate_up_columns(config)
    self.gate_up_proj = FusedDense(h, widths, groups, bias=False, sharding=COLUMNS, dtype=dtype,
                                   rngs=rngs)
    self.down_proj = Dense(f, h, bias=False, sharding=ROWS, dtype=dtype, rngs=rngs)

  @staticmethod
  def gate_up_columns(config) -> tuple[tuple[int, ...], int]:
    """(widths, groups) of `gate_up_proj`: one gate and one up column per hidden unit, so each
    device of a "model" sharding holds the gate and up of the same units."""
    return (1, 1), config.intermediate_size

  def __call__(self, x):
    gate, up = self.gate_up_proj(x)
    return self.down_proj(jax.nn.silu(gate) * up)
