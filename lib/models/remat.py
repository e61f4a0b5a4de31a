"""Per-layer rematerialisation of the decoder stack (training and scoring forward passes).

Without it, reverse mode keeps every layer's intermediates alive until the backward pass reaches
that layer: for a 7B model at 2,048 tokens that includes a float32 [heads, T, T] score tensor per
layer, tens of GiB per row. With `remat`, each layer's forward runs under `nnx.remat`
(`jax.checkpoint`) and its intermediates are recomputed during the backward pass, one layer at a
time; only what the policy saves stays resident.

Policies (the `model.remat` config field, `lib/models/model_setup.py`):
  "none"  no rematerialisation (fastest; the most memory)
  "full"  save nothing inside a layer: only the layer inputs [B, T, hidden] stay resident, the
          whole layer is recomputed once in the backward pass (~1/3 more FLOPs)
  "dots"  `jax.checkpoint_policies.checkpoint_dots_with_no_batch_dims`: keep the projection
          outputs (x @ W), recompute the rest; attention scores (batched einsums) and the
          elementwise ops are recomputed. Less recompute than "full", more memory.

Decoding with a cache never rematerialises (there is no backward pass).

    models.set_remat(model, "full")      # every later forward without a cache is checkpointed
"""
from typing import Any, Callable

import jax
from flax import nnx

from lib.run.config_blocks import REMAT_POLICY_NAMES, check_remat_policy

# Keyed by REMAT_POLICY_NAMES (lib/run/config_blocks.py), so a config's `model.remat` is checked
# without importing JAX.
REMAT_POLICIES: dict[str, Callable[..., bool] | None] = {
    "none": None,
    "full": jax.checkpoint_policies.nothing_saveable,
    "dots": jax.checkpoint_policies.checkpoint_dots_with_no_batch_dims,
}
assert tuple(REMAT_POLICIES) == REMAT_POLICY_NAMES


def set_remat(model: nnx.Module, name: str) -> nnx.Module:
  """Makes `model`'s cache-free forward passes rematerialise each layer with policy `name`.

  The policy is a static attribute of the model (part of its graphdef), so `nnx.split` /
  `nnx.merge` (the trainers' `nnx_apply_fn`) keep it, and parameters are unchanged.

  Args:
    model: a lib.models Qwen or Qwen35.
    name: a key of REMAT_POLICIES.
  Returns:
    The same model (modified in place).
  """
  model.remat = check_remat_policy(name)
  return model


def run_layers(layers: Any, x: jax.Array, ctx: Any, name: str) -> jax.Array:
  """x through every layer without a cache, each layer under `nnx.remat` with policy `name`.

  Args:
    layers: the model's layer list (the per-layer protocol of lib/models/qwen/model.py).
    x: [B, T, hidden] embeddings.
    ctx: the call's Context (positions, masks).
    name: a key of REMAT_POLICIES other than "none".
  Returns:
    [B, T, hidden] output of the last layer (before the final norm).
  """
  def body(layer, h, c):
    return layer(h, c, None)[0]

  step = nnx.remat(body, policy=REMAT_POLICIES[check_remat_policy(name)])
  for layer in layers:
    x = step(layer, x, ctx)
  return x
