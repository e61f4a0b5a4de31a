"""Placing models and batches on a ("data", "model") device mesh.

Parameters carry logical `out_sharding` names (see lib/models/qwen.py); here they become
NamedShardings. A dimension that the mesh axis does not divide (e.g. a 151669-token vocabulary on 4
devices) is replicated instead of failing, so any mesh works for any preset.
"""
import jax
import numpy as np
from flax import nnx
from jax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec

AXES = ("data", "model")


def make_mesh(data: int = 1, model: int = 1, devices=None) -> Mesh:
  """A data x model mesh over the first data*model devices (auto axes: XLA propagates shardings)."""
  devices = jax.devices() if devices is None else devices
  if data * model > len(devices):
    raise ValueError(f"mesh {data}x{model} needs {data * model} devices, {len(devices)} available")
  grid = np.asarray(devices[:data * model]).reshape(data, model)
  return Mesh(grid, AXES, axis_types=(AxisType.Auto, AxisType.Auto))


def _fit(spec: PartitionSpec, shape, mesh: Mesh) -> PartitionSpec:
  fitted = []
  for dim, axis in zip(shape, tuple(spec) + (None,) * (len(shape) - len(spec))):
    fitted.append(axis if axis is None or dim % mesh.shape[axis] == 0 else None)
  return PartitionSpec(*fitted)


def param_shardings(state, mesh: Mesh):
  """State of Variables -> same structure holding a NamedSharding per parameter."""
  specs = nnx.get_partition_spec(state)

  def to_sharding(var, spec_var):
    return var.replace(NamedSharding(mesh, _fit(spec_var.get_value(), var.shape, mesh)))

  is_var = lambda x: isinstance(x, nnx.Variable)
  return jax.tree.map(to_sharding, state, specs, is_leaf=is_var)


def shard_model(model, mesh: Mesh):
  """Moves every parameter of `model` onto its sharding over `mesh` (in place); returns model."""
  state = nnx.state(model)
  shardings = param_shardings(state, mesh)
  is_var = lambda x: isinstance(x, nnx.Variable)
  placed = jax.tree.map(lambda v, s: v.replace(jax.device_put(v.get_value(), s.get_value())),
                        state, shardings, is_leaf=is_var)
  nnx.update(model, placed)
  return model


def shard_batch(x, mesh: Mesh):
  """Splits the leading (batch) axis over "data" when it divides evenly; replicates otherwise."""
  spec = PartitionSpec("data") if x.shape[0] % mesh.shape["data"] == 0 else PartitionSpec()
  return jax.device_put(x, NamedSharding(mesh, spec))
