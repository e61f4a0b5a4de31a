"""AdamW with warm-up + cosine/linear/constant/warm-stable-decay schedule and global-norm
clipping, and micro-batch gradient accumulation inside one jitted step.

    tx = optim.adamw(lr=1e-5, total_steps=1000, warmup_frac=0.03, schedule="cosine")

Accumulation is done by `accumulate_grads` (a `lax.scan` over micro-batches inside the train
step), not by `optax.MultiSteps`, so one optimizer step costs one dispatch and a token-weighted
loss over k micro-batches equals the same loss over the concatenated batch.
"""
from typing import Any, Callable

import jax
import jax.numpy as jnp
import optax

from lib.parallel import sharding

SCHEDULES = ("cosine", "constant", "linear", "wsd")


def lr_schedule(lr: float, total_steps: int, warmup_frac: float = 0.0,
                schedule: str = "cosine", final_frac: float = 0.0,
                decay_frac: float = 0.2) -> optax.Schedule:
  """Linear warm-up over W = round(warmup_frac * total_steps) steps from 0 to `lr`, then
  `schedule` over the remaining R = total_steps - W steps:

      cosine    lr_t = lr (f + (1 - f)(1 + cos(pi t / R)) / 2)          f = final_frac
      linear    lr_t = lr (1 - (1 - f) t / R)
      constant  lr_t = lr
      wsd       (warm-up, stable, decay) lr_t = lr until the last D = round(decay_frac *
                total_steps) steps, then the cosine above over those D steps: a model that
                learns a rule late in the run still trains at the full rate when it does

  Args:
    lr: peak learning rate.
    total_steps: optimizer steps in the run (values < 1 count as 1).
    warmup_frac: fraction of total_steps spent warming up, in [0, 1).
    schedule: one of SCHEDULES.
    final_frac: final learning rate as a fraction of lr (cosine, linear, wsd).
    decay_frac: the fraction of total_steps that "wsd" decays over, in (0, 1 - warmup_frac].
  Returns:
    optax.Schedule: step -> learning rate.
  """
  if schedule not in SCHEDULES:
    raise ValueError(f"unknown schedule {schedule!r}; valid: {SCHEDULES}")
  if not 0.0 <= warmup_frac < 1.0:
    raise ValueError(f"warmup_frac must lie in [0, 1); got {warmup_frac}")
  total_steps = max(int(total_steps), 1)
  warm = int(round(warmup_frac * total_steps))
  rest = max(total_steps - warm, 1)
  if schedule == "wsd" and not 0.0 < decay_frac <= 1.0 - warmup_frac:
    raise ValueError(f"decay_frac must lie in (0, 1 - warmup_frac]; got {decay_frac}")
  if schedule == "constant":
    main = optax.constant_schedule(lr)
  elif schedule == "cosine":
    main = optax.cosine_decay_schedule(lr, rest, alpha=final_frac)
  elif schedule == "wsd":
    decay = min(max(int(round(decay_frac * total_steps)), 1), rest)
    main = optax.join_schedules(
        [optax.constant_schedule(lr), optax.cosine_decay_schedule(lr, decay, alpha=final_frac)],
        [rest - decay])
  else:
    main = optax.linear_schedule(lr, lr * final_frac, rest)
  if warm == 0:
    return main
  return optax.join_schedules([optax.linear_schedule(0.0, lr, warm), main], [warm])


def decay_mask(params: Any) -> Any:
  """Weight decay on matrices only (ndim >= 2): norms' scales and biases are not decayed, as in
  the Hugging Face Trainer's default parameter groups.

  Args:
    params: pytree of arrays.
  Returns:
    pytree of the same structure with bool leaves, True where the leaf has ndim >= 2.
  """
  return jax.tree.map(lambda p: jnp.ndim(p) >= 2, params)


def adamw(lr: float, total_steps: int, warmup_frac: float = 0.0, schedule: str = "cosine",
          weight_decay: float = 0.01, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8,
          clip_norm: float | None = 1.0, final_frac: float = 0.0,
          decay_frac: float = 0.2) -> optax.GradientTransformation:
  """clip_by_global_norm(clip_norm) -> AdamW(schedule) with decoupled weight decay on matrices.

  Args:
    lr, total_steps, warmup_frac, schedule, final_frac, decay_frac: the schedule, see
      `lr_schedule`.
    weight_decay: decoupled weight-decay rate, applied to `decay_mask` leaves only.
    b1, b2, eps: Adam moment decays and denominator epsilon.
    clip_norm: global gradient-norm bound; None or <= 0 disables clipping.
  Returns:
    optax.GradientTransformation.
  """
  sched = lr_schedule(lr, total_steps, warmup_frac, schedule, final_frac, decay_frac)
  parts = []
  if clip_norm is not None and clip_norm > 0:
    parts.append(optax.clip_by_global_norm(clip_norm))
  parts.append(optax.adamw(sched, b1=b1, b2=b2, eps=eps, weight_decay=weight_decay,
                           mask=decay_mask))
  return optax.chain(*parts)


def from_config(c: Any, total_steps: int) -> optax.GradientTransformation:
  """`adamw` from a config block with fields lr, warmup_frac, schedule, weight_decay, b1, b2,
  clip_norm (all required, so the defaults live in the config files).

  Args:
    c: config block (attribute access, e.g. ml_collections.ConfigDict) with the fields above;
      eps and final_frac keep `adamw`'s defaults.
    total_steps: optimizer steps in the run.
  Returns:
    optax.GradientTransformation.
  """
  return adamw(lr=c.lr, total_steps=total_steps, warmup_frac=c.warmup_frac,
               schedule=c.schedule, weight_decay=c.weight_decay, b1=c.b1, b2=c.b2,
               clip_norm=c.clip_norm)


def accumulate_grads(loss_fn: Callable, params: Any, microbatches: Any,
                     grad_sharding: Any = None) -> tuple[Any, Any, Any]:
  """Sums `loss_fn` and its gradient over the leading axis of `microbatches` with `lax.scan`,
  then divides by the summed weight.

  Args:
    loss_fn: (params, microbatch) -> (loss_sum, (weight, metrics)). For a token-mean loss return
      the token *sum* and the token count as weight, so the result equals the token-mean over all
      micro-batches; for a per-micro-batch mean return weight 1 (plain averaging).
    params: differentiated pytree.
    microbatches: pytree whose leaves have a leading micro-batch axis of size k.
    grad_sharding: the params' sharding pytree on a mesh (FSDP), or None. Given, every
      micro-batch is split over the batch devices (`lib.parallel.sharding.spread_micro`) and each
      micro-batch's gradient and the running sum are kept in the params' shards
      (reduce-scatter), instead of a full-size gradient per device.
  Returns:
    (loss, grads, metrics): loss and grads divided by the total weight; metrics averaged over the
    micro-batches (weight-weighted), plus "weight" (the total).
  """
  if grad_sharding is None and jax.tree.leaves(microbatches)[0].shape[0] == 1:
    return _one_microbatch(loss_fn, params, jax.tree.map(lambda x: x[0], microbatches))
  grad_fn = jax.value_and_grad(loss_fn, has_aux=True)
  pin = lambda g: g if grad_sharding is None else jax.lax.with_sharding_constraint(
      g, grad_sharding)
  if grad_sharding is not None:
    microbatches = sharding.spread_micro(microbatches, grad_sharding)

  def body(carry, mb):
    loss_acc, grad_acc, w_acc, met_acc = carry
    (loss, (w, met)), g = grad_fn(params, mb)
    g = pin(g)
    grad_acc = jax.tree.map(jnp.add, grad_acc, g)
    met_acc = jax.tree.map(lambda a, m: a + w * m, met_acc, met)
    return (loss_acc + loss, grad_acc, w_acc + w, met_acc), None

  first = jax.tree.map(lambda x: x[0], microbatches)
  _, (_, met_shape) = jax.eval_shape(loss_fn, params, first)
  zeros = lambda t: jax.tree.map(lambda s: jnp.zeros(s.shape, jnp.float32), t)
  init = (jnp.zeros((), jnp.float32), pin(jax.tree.map(jnp.zeros_like, params)),
          jnp.zeros((), jnp.float32), zeros(met_shape))
  (loss, grads, weight, met), _ = jax.lax.scan(body, init, microbatches)
  denom = jnp.maximum(weight, 1e-12)
  grads = jax.tree.map(lambda g: g / denom.astype(g.dtype), grads)
  metrics = jax.tree.map(lambda m: m / denom, met)
  metrics["weight"] = weight
  return loss / denom, grads, metrics


def _one_microbatch(loss_fn: Callable, params: Any, mb: Any) -> tuple[Any, Any, Any]:
  """`accumulate_grads` for k = 1: the gradient of loss_sum / weight (the weight does not depend
  on the params), so no zero accumulator, no scan and no separate pass dividing the gradient."""
  def scaled(p):
    loss, (w, met) = loss_fn(p, mb)
    denom = jnp.maximum(jax.lax.stop_gradient(w), 1e-12)
    return loss / denom, (w, met, denom)

  (loss, (weight, met, denom)), grads = jax.value_and_grad(scaled, has_aux=True)(params)
  metrics = jax.tree.map(lambda m: weight * m / denom, met)
  metrics["weight"] = weight
  return loss, grads, metrics
