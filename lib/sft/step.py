"""Supervised fine-tuning: the causal-LM loss on target tokens and a jitted SFT update step.

Batch layout (all [N, T], N = accum_steps x micro-batch):
  input_ids       int32 token ids (prompt + target + EOS + padding)
  attention_mask  1 on real tokens (left or right padding)
  loss_mask       1 on tokens that are targets (several spans for multi-turn rows), aligned with
                  input_ids: token t counts when loss_mask[:, t] == 1, scored from position t - 1.
"""
from typing import Any

import jax
import jax.numpy as jnp
import optax

from lib.models.logprobs import token_logprobs
from lib.train import optim
from lib.train.state import ApplyFn, TrainState


def causal_lm_loss(logits: jax.Array, input_ids: jax.Array, loss_mask: jax.Array,
                   reduction: str = "mean") -> tuple[jax.Array, jax.Array]:
  """Next-token cross-entropy on the target tokens only.

      nll[b, t] = -log softmax(logits[b, t - 1])[input_ids[b, t]]      for t >= 1
      loss      = sum_{b,t} loss_mask[b, t] nll[b, t] / sum loss_mask[b, 1:]   (reduction="mean")

  Args:
    logits: [B, T, V] where logits[:, t] scores token t + 1.
    input_ids: [B, T] int.
    loss_mask: [B, T], aligned with input_ids; loss_mask[:, 0] is ignored (nothing predicts it).
    reduction: "mean" (token mean) or "sum" (token sum; pair it with the returned count).
  Returns:
    (loss, n_target_tokens). Masked positions get exactly zero gradient.
  """
  if reduction not in ("mean", "sum"):
    raise ValueError(f"reduction must be 'mean' or 'sum'; got {reduction!r}")
  nll = -token_logprobs(logits[:, :-1], input_ids[:, 1:])
  mask = loss_mask[:, 1:].astype(bool)
  total = jnp.where(mask, nll, 0.0).sum()
  count = mask.sum().astype(jnp.float32)
  if reduction == "sum":
    return total, count
  return total / jnp.maximum(count, 1.0), count


def _split_micro(batch: dict, accum_steps: int) -> dict:
  def split(x):
    if x.shape[0] % accum_steps:
      raise ValueError(f"batch of {x.shape[0]} rows is not divisible by accum_steps={accum_steps}")
    return x.reshape(accum_steps, x.shape[0] // accum_steps, *x.shape[1:])
  return jax.tree.map(split, batch)


def make_sft_step(apply_fn: ApplyFn, tx: optax.GradientTransformation, accum_steps: int = 1,
                  param_sharding: Any = None, target_window: int = 0):
  """Returns step(state, batch) -> (state, metrics), not yet jitted (jit it with the shardings
  of your mesh, or plainly: `jax.jit(step, donate_argnums=0)`).

  The gradient is the token-mean over all `accum_steps` micro-batches together (not a mean of
  micro-batch means), so accumulation changes memory use, not the update.
  `param_sharding`, if given, pins the gradient to the parameters' sharding (FSDP reduce-scatter).
  Metrics: loss, grad_norm, target_tokens, train_tokens (= attention tokens: prompt + target +
  EOS, the budget the papers match), lr-free so one step function serves every schedule.

  `target_window=K` (left-padded rows whose targets all lie in the last K tokens, e.g.
  prompt-then-answer SFT): the output head and the softmax run on the last K + 1 positions only,
  the same loss and gradient at a fraction of the head's cost when answers are short. The
  apply_fn must take `last=` (lib.train.state.nnx_apply_fn does). Targets outside the window
  would be silently dropped, so the batcher must size the window (see
  lib.sft.batches.left_padded's target_window).

  Args:
    apply_fn: (params, input_ids [B,T], attention_mask [B,T]) -> float32 logits [B,T,V].
    tx: the optax optimizer (its schedule lives inside it).
    accum_steps: micro-batches per step; the batch's N rows must divide by it.
    param_sharding: the parameters' sharding pytree, or None.
    target_window: K > 0 scores only the last K + 1 positions (see above); 0 = all.
  Returns:
    step(state: TrainState, batch: {input_ids, attention_mask, loss_mask} each [N,T]) ->
    (state with step + 1, metrics dict of float32 scalars).
  """
  def loss_fn(params, mb):
    ids, loss_mask = mb["input_ids"], mb["loss_mask"]
    if target_window:
      logits = apply_fn(params, ids, mb["attention_mask"], last=target_window + 1)
      ids, loss_mask = ids[:, -(target_window + 1):], loss_mask[:, -(target_window + 1):]
    else:
      logits = apply_fn(params, ids, mb["attention_mask"])
    total, count = causal_lm_loss(logits, ids, loss_mask, reduction="sum")
    return total, (count, {})

  def step(state: TrainState, batch: dict):
    micro = _split_micro(batch, accum_steps)
    loss, grads, met = optim.accumulate_grads(loss_fn, state.params, micro, param_sharding)
    if param_sharding is not None:
      grads = jax.lax.with_sharding_constraint(grads, param_sharding)
    updates, opt_state = tx.update(grads, state.opt_state, state.params)
    params = optax.apply_updates(state.params, updates)
    metrics = {
        "loss": loss,
        "grad_norm": optax.tree.norm(grads),
        "target_tokens": met["weight"],
        "train_tokens": batch["attention_mask"].astype(jnp.float32).sum(),
    }
    return state.replace(step=state.step + 1, params=params, opt_state=opt_state), metrics

  return step


def make_sft_eval(apply_fn: ApplyFn):
  """Returns eval(params, batch) -> token-mean target NLL (jit it yourself).

  Args:
    apply_fn: (params, input_ids [B,T], attention_mask [B,T]) -> float32 logits [B,T,V].
  Returns:
    evaluate(params, batch: {input_ids, attention_mask, loss_mask} each [B,T]) -> float32
    scalar, the loss_mask-weighted mean next-token NLL.
  """
  def evaluate(params, batch):
    logits = apply_fn(params, batch["input_ids"], batch["attention_mask"])
    return causal_lm_loss(logits, batch["input_ids"], batch["loss_mask"])[0]
  return evaluate
