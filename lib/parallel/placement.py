"""Placing model parameters on the ("data", "fsdp", "model") mesh of
`lib.parallel.sharding.make_mesh`.

Parameters carry logical `out_sharding` names (see lib/models/qwen/model.py): column-parallel
projections shard their output features over "model", row-parallel ones their input features; here
they become NamedShardings. A dimension that the mesh axis does not divide (e.g. a 151669-token
vocabulary on 4 devices) is replicated instead of failing, so any mesh works for any preset.

    mesh = sharding.make_mesh(data=2, model=4)     # re-exported by lib.models
    shard_model(model, mesh)
"""
import jax
from flax import nnx
from jax.sharding import Mesh, NamedSharding, PartitionSpec


def _fit(spec: PartitionSpec, shape, mesh: Mesh) -> PartitionSpec:
  fitted = []
  for dim, axis in zip(shape, tuple(spec) + (None,) * (len(shape) - len(spec))):
    fitted.append(axis if axis is None or dim % mesh.shape[axis] == 0 else None)
  return PartitionSpec(*fitted)


def param_shardings(state, mesh: Mesh):
  """Where each parameter of a model goes on `mesh`.

  Args:
    state: an `nnx.State` of Variables (abstract or concrete) whose metadata holds `out_sharding`.
    mesh: a mesh with a "model" axis (`lib.parallel.sharding.make_mesh`).

  Returns:
    The same structure, each Variable holding a NamedSharding instead of its array.
  """
  specs = nnx.get_partition_spec(state)

  def to_sharding(var, spec_var):
    return var.replace(NamedSharding(mesh, _fit(spec_var.get_value(), var.shape, mesh)))

  is_var = lambda x: isinstance(x, nnx.Variable)
  return jax.tree.map(to_sharding, state, specs, is_leaf=is_var)


def shard_model(model, mesh: Mesh):
  """Moves every parameter of `model` onto its sharding over `mesh`, in place.

  Args:
    model: an NNX model (e.g. `lib.models.Qwen`).
    mesh: a mesh with a "model" axis (`lib.parallel.sharding.make_mesh`).

  Returns:
    `model` itself.
  """
  state = nnx.state(model)
  shardings = param_shardings(state, mesh)
  is_var = lambda x: isinstance(x, nnx.Variable)
  placed = jax.tree.map(lambda v, s: v.replace(jax.device_put(v.get_value(), s.get_value())),
                        state, shardings, is_leaf=is_var)
  nnx.update(model, placed)
  return model
