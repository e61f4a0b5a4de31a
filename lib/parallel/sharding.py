"""The one device mesh, and data-parallel + FSDP placement of train states and batches on it.

`make_mesh(data, fsdp, model)` builds the ("data", "fsdp", "model") mesh that both training and
inference use (`mesh_from_config(config)` builds it from a run config's `mesh` block): the trainer
shards states over "fsdp" (here) and batches over "data" x "fsdp"; the model's tensor-parallel
placement (`lib.parallel.placement`) shards weights over "model". An axis of size 1 changes nothing,
so one mesh serves a pure-FSDP train step and a pure tensor-parallel model.

Every array leaf of the train state (params, AdamW moments) is split along its largest dimension
that the "fsdp" axis divides (ZeRO-3 style; XLA all-gathers weights for the forward pass and
reduce-scatters gradients); small or indivisible leaves are replicated. Batches are split along
their leading axis over "data" and "fsdp", so those devices all hold different rows.

    mesh = sharding.make_mesh(data=2, fsdp=4)
    state_sh = sharding.state_shardings(state, mesh)
    state = jax.device_put(state, state_sh)
    step = sharding.jit_step(sft_step, mesh, state_sh)     # (state, batch) -> (state, metrics)

Multi-host: call `jax.distributed.initialize()` before building the mesh (launch.py flag); the mesh
then spans `jax.devices()` of all hosts. Each host either passes the whole global batch to
`shard_batch` (every host must hold the same rows; each keeps its own) or only its own rows,
`process_rows(n, mesh)`, to `shard_process_batch` (lib/parallel/distributed.py).
"""
from typing import Any, Callable

import jax
import numpy as np
from jax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec as P

AXES = ("data", "fsdp", "model")
BATCH_AXES = ("data", "fsdp")


def make_mesh(data: int = 1, fsdp: int = 1, model: int = 1, devices=None) -> Mesh:
  """The ("data", "fsdp", "model") mesh over the first data*fsdp*model devices.

  Args:
    data: data-parallel replicas (batch rows split, weights replicated).
    fsdp: ZeRO-3 shards of the train state (batch rows split too).
    model: tensor-parallel shards of the weights (`lib.models.shard_model`).
    devices: defaults to `jax.devices()`.
    At most one of data, fsdp, model may be -1: that axis takes all remaining devices.

  Returns:
    A Mesh of shape (data, fsdp, model) with auto axes (XLA propagates shardings).
  """
  devices = list(jax.devices() if devices is None else devices)
  n = len(devices)
  sizes = {"data": data, "fsdp": fsdp, "model": model}
  free = [axis for axis, size in sizes.items() if size == -1]
  if len(free) > 1:
    raise ValueError(f"at most one of data, fsdp, model may be -1, got {sizes}")
  if free:
    rest = int(np.prod([size for size in sizes.values() if size != -1]))
    sizes[free[0]] = n // rest if rest > 0 else 0
  total = int(np.prod(list(sizes.values())))
  if min(sizes.values()) < 1 or total > n:
    shape = " x ".join(f"{axis}={size}" for axis, size in sizes.items())
    raise ValueError(f"mesh {shape} does not fit {n} devices")
  grid = np.asarray(devices[:total]).reshape(tuple(sizes.values()))
  return Mesh(grid, AXES, axis_types=(AxisType.Auto,) * len(AXES))


def mesh_from_config(config: Any) -> Mesh | None:
  """The ("data", "fsdp") mesh of a run config's `mesh` block; None for 1 x 1 or a config without
  a `mesh` block (one device, no sharding), so single-device runs never build a mesh.

  Args:
    config: a run config, normally with a `mesh` block (data, fsdp).
  """
  if "mesh" not in config or config.mesh.data * config.mesh.fsdp == 1:
    return None
  return make_mesh(config.mesh.data, config.mesh.fsdp)


def fsdp_spec(shape: tuple[int, ...], n_fsdp: int, min_size: int = 1024) -> P:
  """PartitionSpec putting "fsdp" on the largest dimension divisible by n_fsdp (ties: the last),
  or replicating when the leaf has fewer than `min_size` elements or nothing divides.

  Args:
    shape: the array's shape.
    n_fsdp: size of the mesh's "fsdp" axis (1: always replicated).
    min_size: leaves with fewer elements are replicated.
  Returns:
    P() or a PartitionSpec with "fsdp" on one dimension, None elsewhere.
  """
  if n_fsdp == 1 or int(np.prod(shape, dtype=np.int64)) < min_size:
    return P()
  best = None
  for i, d in enumerate(shape):
    if d % n_fsdp == 0 and (best is None or d >= shape[best]):
      best = i
  if best is None:
    return P()
  return P(*[("fsdp" if i == best else None) for i in range(len(shape))])


def state_shardings(tree: Any, mesh: Mesh, min_size: int = 1024) -> Any:
  """Same structure as `tree` (params, optimizer state or a whole TrainState) with a
  NamedSharding per array leaf. The rule depends on shape only, so AdamW moments follow their
  parameters.

  Args:
    tree: a pytree of arrays or ShapeDtypeStructs.
    mesh: a mesh with an "fsdp" axis.
    min_size: see `fsdp_spec`.
  """
  n = mesh.shape["fsdp"]
  return jax.tree.map(lambda x: NamedSharding(mesh, fsdp_spec(np.shape(x), n, min_size)), tree)


def batch_sharding(mesh: Mesh) -> NamedSharding:
  """Leading axis split over the "data" and "fsdp" devices, replicated over "model" (one sharding
  for all batch leaves).

  Args:
    mesh: a mesh with "data", "fsdp" and "model" axes.
  """
  return NamedSharding(mesh, P(BATCH_AXES))


def replicated(mesh: Mesh) -> NamedSharding:
  """Every device of `mesh` holds the whole array (metrics, scalars).

  Args:
    mesh: the device mesh.
  """
  return NamedSharding(mesh, P())


def shard_batch(batch: Any, mesh: Mesh) -> Any:
  """device_put every leaf split along its leading axis over "data" x "fsdp"; that axis must be
  divisible by data * fsdp (pad the batch, with zero masks, to a multiple of it). In a
  multi-process run every process passes the same whole batch and places the rows of its own
  devices (`shard_process_batch` takes only this process's rows).

  Args:
    batch: a pytree of [N, ...] arrays (N divisible by data * fsdp, else ValueError).
    mesh: the device mesh.
  Returns:
    The same pytree of jax.Arrays placed with `batch_sharding(mesh)`.
  """
  n = mesh.shape["data"] * mesh.shape["fsdp"]
  for x in jax.tree.leaves(batch):
    if np.shape(x)[0] % n:
      raise ValueError(f"batch leading axis {np.shape(x)[0]} is not divisible by {n} devices")
  return jax.device_put(jax.tree.map(_canonical, batch), batch_sharding(mesh))


def _canonical(x):
  """A host leaf as the array JAX will hold (float64 -> float32 without jax_enable_x64); a
  jax.Array as it is (no round trip through the host). A multi-process device_put compares the
  value it was given across processes with the one it placed, so a float64 leaf would otherwise
  fail that check on every process ("not the same on each process") although all processes
  passed the same rows."""
  if isinstance(x, jax.Array):
    return x
  x = np.asarray(x)
  return x.astype(jax.dtypes.canonicalize_dtype(x.dtype), copy=False)


def process_rows(n: int, mesh: Mesh) -> slice:
  """The rows of an [n, ...] global batch that this process's devices hold under
  `batch_sharding(mesh)` (all of them in a single-process run), the slice to feed to
  `shard_process_batch`.

  Args:
    n: the global batch's leading size (divisible by data * fsdp).
    mesh: the device mesh.
  Returns:
    slice(start, stop) of the leading axis.
  Raises:
    ValueError: this process's devices hold rows that are not one contiguous block (a mesh
      whose device order interleaves processes along the batch axes).
  """
  index = batch_sharding(mesh).addressable_devices_indices_map((n,))
  starts = sorted({(idx[0].start or 0, idx[0].stop or n) for idx in index.values()})
  for (_, stop), (start, _) in zip(starts, starts[1:]):
    if stop != start:
      raise ValueError(f"process {jax.process_index()} holds rows {starts} of the batch, not one "
                       f"block; build the mesh with each process's devices together")
  return slice(starts[0][0], starts[-1][1])


def shard_process_batch(local_batch: Any, mesh: Mesh) -> Any:
  """The global batch assembled from every process's own rows: each process passes its
  `process_rows` slice (only those rows need to exist on that host), and the result is the
  same global jax.Array as `shard_batch` of the whole batch. Multi-process runs that load data
  per host use this; in a single-process run it equals `shard_batch`.

  Args:
    local_batch: a pytree of [n / process_count, ...] arrays, this process's rows.
    mesh: the device mesh.
  Returns:
    The pytree of global [n, ...] jax.Arrays placed with `batch_sharding(mesh)`.
  """
  sh = batch_sharding(mesh)
  procs = len({d.process_index for d in mesh.devices.flat})
  def put(x):
    x = _canonical(x)
    return jax.make_array_from_process_local_data(sh, x, (x.shape[0] * procs, *x.shape[1:]))
  return jax.tree.map(put, local_batch)


def jit_step(step: Callable, mesh: Mesh, state_sharding: Any, donate: bool = True) -> Callable:
  """jax.jit of step(state, batch) -> (state, metrics) with the state kept on `state_sharding`,
  the batch split as `batch_sharding` and the metrics replicated.

  Args:
    step: the unjitted step function.
    mesh: the device mesh.
    state_sharding: a sharding pytree matching the state (e.g. from `state_shardings`).
    donate: donate the input state's buffers.
  Returns:
    The jitted step.
  """
  return jax.jit(step, in_shardings=(state_sharding, batch_sharding(mesh)),
                 out_shardings=(state_sharding, replicated(mesh)),
                 donate_argnums=(0,) if donate else ())


def jit_teacher_step(step: Callable, mesh: Mesh, state_sharding: Any, teacher_sharding: Any,
                     donate: bool = True) -> Callable:
  """`jit_step` for step(state, teacher_params, batch) -> (state, metrics) (lib.rl.opsd): the frozen
  teacher's params stay on `teacher_sharding` and are never donated.

  Args:
    step: the unjitted step function.
    mesh: the device mesh.
    state_sharding: a sharding pytree matching the state.
    teacher_sharding: a sharding pytree matching the teacher's params.
    donate: donate the input state's buffers.
  Returns:
    The jitted step.
  """
  return jax.jit(step, in_shardings=(state_sharding, teacher_sharding, batch_sharding(mesh)),
                 out_shardings=(state_sharding, replicated(mesh)),
                 donate_argnums=(0,) if donate else ())


def spread_micro(microbatches: Any, param_sharding: Any) -> Any:
  """Constrains [accum, rows, ...] micro-batches so every micro-batch's rows are split over the
  "data" x "fsdp" devices (axis 1), not whole micro-batches over devices (what a reshape of a
  row-sharded batch gives): each device then runs 1/n of every micro-batch.

  Args:
    microbatches: pytree of [accum, rows, ...] arrays (inside jit).
    param_sharding: the params' NamedSharding pytree (its mesh is used).
  Returns:
    The same pytree under a sharding constraint.
  """
  mesh = jax.tree.leaves(param_sharding)[0].mesh
  spec = NamedSharding(mesh, P(None, BATCH_AXES))
  return jax.tree.map(lambda x: jax.lax.with_sharding_constraint(x, spec), microbatches)
