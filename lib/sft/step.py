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

from lib.models.chunked import LOSS_CHUNK_TOKENS, chunked_token_logprobs
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
  return masked_nll(-token_logprobs(logits[:, :-1], input_ids[:, 1:]), loss_mask, reduction)


def chunked_causal_lm_loss(hidden: jax.Array, head_w: jax.Array, input_ids: jax.Array,
                           loss_mask: jax.Array, chunk_tokens: int = LOSS_CHUNK_TOKENS,
                           reduction: str = "mean") -> tuple[jax.Array, jax.Array]:
  """`causal_lm_loss` from the final hidden states and the head weight, the logits formed
  `chunk_tokens` positions at a time (`lib.models.chunked`): the same loss and gradient without
  [B, T, V] logits.

      nll[b, t] = -log softmax(hidden[b, t - 1] @ W)[input_ids[b, t]]   for t >= 1

  Args:
    hidden: [B, T, D] final hidden states; hidden[:, t] predicts token t + 1.
    head_w: [D, V] output-head weight.
    input_ids, loss_mask, reduction: as `causal_lm_loss`.
    chunk_tokens: positions per chunk (> 0).
  Returns:
    (loss, n_target_tokens). Masked positions get exactly zero gradient.
  """
  logp, _ = chunked_token_logprobs(hidden[:, :-1], head_w, input_ids[:, 1:],
                                   chunk_tokens=chunk_tokens)
  return masked_nll(-logp, loss_mask, reduction)


def masked_nll(nll: jax.Array, loss_mask: jax.Array,
               reduction: str = "mean") -> tuple[jax.Array, jax.Array]:
  """Sum or mean of nll[b, t - 1] over the target tokens t of loss_mask (dropping column 0).

  Args:
    nll: [B, T - 1] per-token negative log-likelihoods, nll[:, t - 1] that of token t.
    loss_mask: [B, T].
    reduction: "mean" or "sum".
  Returns:
    (loss, n_target_tokens); masked entries are selected away (zero gradient).
  """
  if reduction not in ("mean", "sum"):
    raise ValueError(f"reduction must be 'mean' or 'sum'; got {reduction!r}")
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


def lm_loss(apply_fn: ApplyFn, params: Any, batch: dict, target_window: int = 0,
            loss_chunk_tokens: int = LOSS_CHUNK_TOKENS,
            reduction: str = "mean") -> tuple[jax.Array, jax.Array]:
  """The causal-LM loss of a batch under apply_fn: vocabulary-chunked (`chunked_causal_lm_loss`
  over `apply_fn(..., hidden=True)`) when `loss_chunk_tokens` > 0, else from full logits.

  Args:
    apply_fn, params: the model.
    batch: {input_ids, attention_mask, loss_mask} each [B, T].
    target_window: K > 0 scores only the last K + 1 positions (`make_sft_step`); 0 = all.
    loss_chunk_tokens: positions per head chunk; 0 = full [B, T, V] logits.
    reduction: "mean" or "sum".
  Returns:
    (loss, n_target_tokens).
  """
  ids, mask, loss_mask = batch["input_ids"], batch["attention_mask"], batch["loss_mask"]
  last = target_window + 1 if target_window else 0
  if last:
    ids, loss_mask = ids[:, -last:], loss_mask[:, -last:]
  if loss_chunk_tokens:
    hidden, head_w = apply_fn(params, batch["input_ids"], mask, last=last, hidden=True)
    return chunked_causal_lm_loss(hidden, head_w, ids, loss_mask, loss_chunk_tokens, reduction)
  logits = apply_fn(params, batch["input_ids"], mask, last=last) if last else apply_fn(
      params, batch["input_ids"], mask)
  return causal_lm_loss(logits, ids, loss_mask, reduction)


def make_sft_step(apply_fn: ApplyFn, tx: optax.GradientTransformation, accum_steps: int = 1,
                  param_sharding: Any = None, target_window: int = 0,
                  loss_chunk_tokens: int = LOSS_CHUNK_TOKENS):
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
    loss_chunk_tokens: the head and softmax run this many positions at a time
      (`lib.models.chunked`; apply_fn must take `hidden=`); 0 = full [B, T, V] logits.
  Returns:
    step(state: TrainState, batch: {input_ids, attention_mask, loss_mask} each [N,T]) ->
    (state with step + 1, metrics dict of float32 scalars).
  """
  def loss_fn(params, mb):
    total, count = lm_loss(apply_fn, params, mb, target_window, loss_chunk_tokens, "sum")
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


def make_sft_eval(apply_fn: ApplyFn, loss_chunk_tokens: int = LOSS_CHUNK_TOKENS):
  """Returns eval(params, batch) -> token-mean target NLL (jit it yourself).

  Args:
    apply_fn: (params, input_ids [B,T], attention_mask [B,T]) -> float32 logits [B,T,V].
    loss_chunk_tokens: as `make_sft_step`.
  Returns:
    evaluate(params, batch: {input_ids, attention_mask, loss_mask} each [B,T]) -> float32
    scalar, the loss_mask-weighted mean next-token NLL.
  """
  def evaluate(params, batch):
    return lm_loss(apply_fn, params, batch, loss_chunk_tokens=loss_chunk_tokens)[0]
  return evaluate
