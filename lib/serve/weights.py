"""Weight pushes into a served Flax model (RL rollouts from a served policy, issue #45).

  OpenAIServer.load_params(params)                      in process: the trainer's params pytree
  POST /update_weights_from_disk {"model_path": dir}    over HTTP: a checkpoint dir (SGLang's route
                                                        name; `save_pretrained`'s format)

Both replace the served model's `nnx.Param`s on the model worker's thread between batches (a
worker "call" job), so a push never overlaps a sampler call: requests admitted before the push
finish with the old weights, later ones sample with the new. The new weights must have the served
model's tree and shapes (same architecture); they are cast to the served weights' dtypes. Nothing
is re-compiled: the sampler takes the weights as arguments.
"""
import os

import jax
import jax.numpy as jnp
from flax import nnx

from lib.models import pretrained
from lib.serve.errors import RequestError
from lib.serve.worker import Job, ModelWorker


def served_params(model: nnx.Module):
  """The served model's `nnx.Param` state."""
  return nnx.state(model, nnx.Param)


def check_params(model: nnx.Module, params) -> None:
  """Raises ValueError naming the first difference between `params` and the served model's
  params (tree structure or a leaf's shape)."""
  have = served_params(model)
  want_tree, got_tree = jax.tree.structure(have), jax.tree.structure(params)
  if want_tree != got_tree:
    raise ValueError(f"pushed params have another tree than the served model's "
                     f"({got_tree.num_leaves} vs {want_tree.num_leaves} leaves)")
  for (path, a), b in zip(jax.tree.leaves_with_path(have), jax.tree.leaves(params)):
    if tuple(a.shape) != tuple(b.shape):
      raise ValueError(f"pushed param {jax.tree_util.keystr(path)} has shape {tuple(b.shape)}, "
                       f"the served model's {tuple(a.shape)}")


def apply_params(model: nnx.Module, params) -> None:
  """Writes a copy of `params` (checked, cast to the served dtypes) into the model's Params: the
  server owns its buffers, so a trainer step that donates its params cannot delete them."""
  check_params(model, params)
  have = served_params(model)
  cast = jax.tree.map(lambda a, b: jnp.array(b, dtype=a.dtype, copy=True), have, params)
  nnx.update(model, cast)


def push(worker: ModelWorker, model: nnx.Module, params, timeout_s: float) -> None:
  """Writes `params` into `model` on the worker's thread, between batches; returns when done.

  Args:
    worker: the server's model worker. model: the served model. params: the new Params.
    timeout_s: how long the push may wait for the running batch.
  Raises:
    ValueError: another tree or shape. RuntimeError: the push failed or timed out.
  """
  check_params(model, params)
  job = worker.submit(Job("call", lambda: apply_params(model, params), 0, timeout_s))
  if not job.done.wait(timeout_s) or job.error is not None:
    raise RuntimeError(f"weight push failed: {job.error or 'timed out'}")


def params_from_disk(model: nnx.Module, body) -> object:
  """The Params of the checkpoint an /update_weights_from_disk body names, at the served dtype.

  Args:
    model: the served model (its dtype).
    body: {"model_path": a local checkpoint directory (config.json + safetensors)}.
  Returns:
    The checkpoint's nnx.Param state.
  Raises:
    RequestError: 400 naming a bad field, a missing directory or an unreadable checkpoint.
  """
  if not isinstance(body, dict):
    raise RequestError(400, "request body must be a JSON object")
  extra = sorted(set(body) - {"model_path"})
  if extra:
    raise RequestError(400, f"unsupported field(s) {', '.join(extra)}; give model_path",
                       param=extra[0])
  path = body.get("model_path")
  if not isinstance(path, str) or not os.path.isdir(path):
    raise RequestError(400, f"model_path must be a checkpoint directory on the server, got "
                            f"{str(path)[:200]!r}", param="model_path")
  dtype = jax.tree.leaves(served_params(model))[0].dtype
  try:
    loaded, _ = pretrained.load_pretrained(path, dtype=jnp.dtype(dtype).name)
  except ValueError as e:
    raise RequestError(400, f"model_path: {str(e)[:300]}", param="model_path") from None
  return served_params(loaded)
