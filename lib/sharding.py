"""Data-parallel + FSDP placement of train states and batches on a ("data", "fsdp") mesh.

Every array leaf of the train state (params, AdamW moments) is split along its largest dimension
that the "fsdp" axis divides (ZeRO-3 style; XLA all-gathers weights for the forward pass and
reduce-scatters gradients); small or indivisible leaves are replicated. Batches are split along
their leading axis over both mesh axes, so all devices hold different rows.

    mesh = sharding.make_mesh(data=2, fsdp=4)
    state_sh = sharding.state_shardings(state, mesh)
    state = jax.device_put(state, state_sh)
    step = sharding.jit_step(sft_step, mesh, state_sh)     # (state, batch) -> (state, metrics)

Multi-host: call `jax.distributed.initialize()` before building the mesh (launch.py flag); the mesh
then spans `jax.devices()` of all hosts and each host feeds its `process_index` slice of the batch.
This is the inference-side counterpart of `lib.models.sharding` (tensor-parallel "model" axis).
"""
from typing import Any, Callable

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

AXES = ("data", "fsdp")
BATCH_AXES = ("data", "fsdp")


def make_mesh(data: int = 1, fsdp: int = -1, devices=None) -> Mesh:
  """A data x fsdp mesh; -1 for one axis takes all remaining devices."""
  devices = list(jax.devices() if devices is None else devices)
  n = len(devices)
  if data == -1 and fsdp == -1:
    raise ValueError("at most one of data, fsdp may be -1")
  if data == -1:
    data = n // fsdp
  if fsdp == -1:
    fsdp = n // data
  if data < 1 or fsdp < 1 or data * fsdp > n:
    raise ValueError(f"mesh data={data} x fsdp={fsdp} does not fit {n} devices")
  return Mesh(np.asarray(devices[:data * fsdp]).reshape(data, fsdp), AXES)


def fsdp_spec(shape: tuple[int, ...], n_fsdp: int, min_size: int = 1024) -> P:
  """PartitionSpec putting "fsdp" on the largest dimension divisible by n_fsdp (ties: the last),
  or replicating when the leaf has fewer than `min_size` elements or nothing divides."""
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
  parameters."""
  n = mesh.shape["fsdp"]
  return jax.tree.map(lambda x: NamedSharding(mesh, fsdp_spec(np.shape(x), n, min_size)), tree)


def batch_sharding(mesh: Mesh) -> NamedSharding:
  """Leading axis split over every device of the mesh (one sharding for all batch leaves)."""
  return NamedSharding(mesh, P(BATCH_AXES))


def replicated(mesh: Mesh) -> NamedSharding:
  return NamedSharding(mesh, P())


def shard_batch(batch: Any, mesh: Mesh) -> Any:
  """device_put every leaf split along its leading axis; that axis must be divisible by the
  mesh size (pad the batch, with zero masks, to a multiple of it)."""
  n = mesh.devices.size
  for x in jax.tree.leaves(batch):
    if np.shape(x)[0] % n:
      raise ValueError(f"batch leading axis {np.shape(x)[0]} is not divisible by {n} devices")
  return jax.device_put(batch, batch_sharding(mesh))


def jit_step(step: Callable, mesh: Mesh, state_sharding: Any, donate: bool = True) -> Callable:
  """jax.jit of step(state, batch) -> (state, metrics) with the state kept on `state_sharding`,
  the batch split over all devices and the metrics replicated."""
  return jax.jit(step, in_shardings=(state_sharding, batch_sharding(mesh)),
                 out_shardings=(state_sharding, replicated(mesh)),
                 donate_argnums=(0,) if donate else ())
