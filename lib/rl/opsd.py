"""On-policy self-distillation (OPSD): the student samples, a frozen teacher (the initial weights)
scores the same tokens with privileged context in its prompt, and the student minimises the
generalized JSD (lib/rl/jsd.py) to the teacher on its generated target span.

    trainer = OPSDTrainer(apply_fn, sample_fn, state, tx, OPSDConfig(alpha=0.5))
    metrics = trainer.iteration(student_prompt, teacher_prompt, key, span_fn=next_state_span)

Prompts are (ids, mask) pairs, left-padded, one row per example; the teacher prompt is the student
prompt with the privileged text (the true or a mismatched next observation) inserted. When an
update epoch reuses samples from an older policy each token's loss is weighted by the detached
importance weight min(exp(logp_student - logp_old), is_clip) (exactly 1 on the first epoch).
"""
import dataclasses
import time
from typing import Any, Callable, ClassVar

import jax
import jax.numpy as jnp
import numpy as np
import optax

from lib.models.chunked import LOSS_CHUNK_TOKENS, chunked_token_logprobs
from lib.models.logprobs import token_logprobs
from lib.rl import jsd as distill, trainer as rl_trainer
from lib.run.config_blocks import ConfigBlock
from lib.train import optim
from lib.train.state import ApplyFn, TrainState, map_row_chunks


@dataclasses.dataclass(frozen=True)
class OPSDConfig(ConfigBlock):
  """Defaults follow the audit's Table 6 (OPSD column); `from_config` reads it from the `opsd`
  config block."""
  block_name: ClassVar[str] = "opsd"
  alpha: float = 0.5              # JSD mixture weight (0: KL(T||S), 1: KL(S||T))
  temperature: float = 1.0        # sampling and distillation temperature
  is_clip: float = 2.0            # importance-weight clip
  update_epochs: int = 1
  minibatch: int = 32             # rows per optimizer step
  micro_batch: int = 0            # rows per accumulation micro-batch; 0 = whole minibatch
  loss_chunk_tokens: int = LOSS_CHUNK_TOKENS  # head + JSD per token chunk; 0 = full logits
  rollout_dtype: str = ""         # "bfloat16": sample from a bf16 copy (bf16 KV cache)
  prefill_rows: int = 0           # > 0: prefill the rollout this many rows at a time
  frozen_dtype: str = ""          # "bfloat16": hold the teacher in bf16 (exact where the model
                                  # computes in bf16: apply_fn casts it there anyway)


def response_logits(apply_fn: ApplyFn, params, ids, mask, n_response: int) -> jax.Array:
  """Logits scoring the last n_response tokens of [R, P+N] sequences -> [R, N, V].

  Args:
    apply_fn: (params, ids, mask) -> [R, P+N, V] logits.
    params: model params pytree.
    ids: [R, P+N] int32 prompt followed by response tokens.
    mask: [R, P+N] int 0/1.
    n_response: N.
  Returns:
    [R, N, V] logits (apply_fn's dtype, not temperature-scaled); [:, t] scores ids[:, P+t].
  """
  return apply_fn(params, ids, mask)[:, -n_response - 1:-1]


def response_hidden(apply_fn: ApplyFn, params, ids, mask,
                    n_response: int) -> tuple[jax.Array, jax.Array]:
  """`response_logits` before the head: the hidden states predicting the last n_response tokens
  and the head weight (for the vocabulary-chunked losses, `lib.models.chunked`).

  Args:
    apply_fn: takes `last=` and `hidden=` (lib.train.state.nnx_apply_fn).
    params, ids, mask, n_response: as `response_logits`.
  Returns:
    (hidden [R, N, D], head weight [D, V]); hidden[:, t] predicts ids[:, P+t].
  """
  hidden, head_w = apply_fn(params, ids, mask, last=n_response + 1, hidden=True)
  return hidden[:, :-1], head_w


def response_jsd(apply_fn: ApplyFn, params, teacher_params, batch: dict,
                 cfg: OPSDConfig) -> tuple[jax.Array, jax.Array]:
  """Per-token generalized JSD of student to teacher and the student's log-probs of the sampled
  tokens, [R, N] each; the teacher under stop_gradient. Vocabulary-chunked
  (`distill.chunked_jsd_logprobs`) when cfg.loss_chunk_tokens > 0, else from full logits.

  Args:
    apply_fn: the model's apply_fn.
    params, teacher_params: student and teacher params.
    batch: student_ids, student_mask, teacher_ids, teacher_mask [R, P+N]; tokens [R, N].
    cfg: alpha, temperature and loss_chunk_tokens are read from it.
  Returns:
    (jsd, logp), float32 [R, N].
  """
  n = batch["tokens"].shape[1]
  if cfg.loss_chunk_tokens:
    hs, ws = response_hidden(apply_fn, params, batch["student_ids"], batch["student_mask"], n)
    ht, wt = jax.lax.stop_gradient(response_hidden(
        apply_fn, teacher_params, batch["teacher_ids"], batch["teacher_mask"], n))
    return distill.chunked_jsd_logprobs(hs, ws, ht, wt, batch["tokens"], alpha=cfg.alpha,
                                        temperature=cfg.temperature,
                                        chunk_tokens=cfg.loss_chunk_tokens)
  s_logits = response_logits(apply_fn, params, batch["student_ids"], batch["student_mask"], n)
  t_logits = jax.lax.stop_gradient(response_logits(
      apply_fn, teacher_params, batch["teacher_ids"], batch["teacher_mask"], n))
  logp = token_logprobs(s_logits / cfg.temperature, batch["tokens"])
  return distill.per_token_generalized_jsd(s_logits, t_logits, cfg.alpha, cfg.temperature), logp


def response_token_logprobs(apply_fn: ApplyFn, params, ids, mask, tokens,
                            cfg: OPSDConfig) -> jax.Array:
  """The student's log-probs of `tokens` [R, N], the last N tokens of ids (the old log-probs of
  a rollout), at cfg.temperature; vocabulary-chunked when cfg.loss_chunk_tokens > 0.

  Args:
    apply_fn, params: the model. ids, mask: [R, P+N]. tokens: [R, N] int32.
    cfg: temperature and loss_chunk_tokens are read from it.
  Returns:
    float32 [R, N].
  """
  n = tokens.shape[1]
  if cfg.loss_chunk_tokens:
    hidden, head_w = response_hidden(apply_fn, params, ids, mask, n)
    return chunked_token_logprobs(hidden, head_w, tokens, temperature=cfg.temperature,
                                  chunk_tokens=cfg.loss_chunk_tokens)[0]
  return token_logprobs(response_logits(apply_fn, params, ids, mask, n) / cfg.temperature, tokens)


def make_opsd_step(apply_fn: ApplyFn, tx: optax.GradientTransformation, cfg: OPSDConfig,
                   accum_steps: int = 1, param_sharding: Any = None):
  """step(state, teacher_params, batch) -> (state, metrics). batch rows [R, ...]: student_ids,
  student_mask [R, Ps+N]; teacher_ids, teacher_mask [R, Pt+N]; tokens, loss_mask, old_logp [R, N].
  The JSD is a token mean over each micro-batch's loss_mask tokens, weighted by tokens across
  micro-batches:

      loss = sum_{r,t} m w D_alpha(P_S, P_T) / sum_{r,t} m,   w = importance_weights(logp, old_logp)

  with the teacher's logits under stop_gradient.

  Args:
    apply_fn: (params, ids, mask) -> logits.
    tx: the optimizer.
    cfg: OPSDConfig; alpha, temperature and is_clip are read from it.
    accum_steps: micro-batches per step; R must be divisible by it.
    param_sharding: the params' sharding pytree on a mesh (FSDP), or None (see
      `optim.accumulate_grads`).
  Returns:
    step(state: TrainState, teacher_params, batch: dict) -> (TrainState, metrics), not jitted.
    Batch dtypes: int32 ids, masks and tokens, float32 old_logp. metrics (scalars): jsd and
    is_weight_mean (token means over loss_mask), loss, grad_norm, target_tokens.
  """
  def loss_fn(params, mb, teacher_params):
    per_tok, logp = response_jsd(apply_fn, params, teacher_params, mb, cfg)
    w = distill.importance_weights(logp, mb["old_logp"], cfg.is_clip)
    mask = mb["loss_mask"].astype(bool)
    count = mask.sum().astype(jnp.float32)
    total = jnp.where(mask, w * per_tok, 0.0).sum()
    metrics = {"jsd": jnp.where(mask, per_tok, 0.0).sum() / jnp.maximum(count, 1.0),
               "is_weight_mean": jnp.where(mask, w, 0.0).sum() / jnp.maximum(count, 1.0)}
    return total, (count, metrics)

  def step(state: TrainState, teacher_params, batch: dict):
    micro = jax.tree.map(
        lambda x: x.reshape(accum_steps, x.shape[0] // accum_steps, *x.shape[1:]), batch)
    loss, grads, metrics = optim.accumulate_grads(
        lambda p, mb: loss_fn(p, mb, teacher_params), state.params, micro, param_sharding)
    updates, opt_state = tx.update(grads, state.opt_state, state.params)
    params = optax.apply_updates(state.params, updates)
    target_tokens = metrics.pop("weight")
    metrics = {**metrics, "loss": loss, "grad_norm": optax.tree.norm(grads),
               "target_tokens": target_tokens}
    return state.replace(step=state.step + 1, params=params, opt_state=opt_state), metrics

  return step


def make_jsd_eval(apply_fn: ApplyFn, cfg: OPSDConfig):
  """eval(student_params, teacher_params, batch) -> token-mean JSD on loss_mask (no weights).

  Args:
    apply_fn: (params, ids, mask) -> logits.
    cfg: OPSDConfig; alpha and temperature are read from it.
  Returns:
    evaluate(params, teacher_params, batch) -> scalar float32 `distill.generalized_jsd`; batch
    as for `make_opsd_step` (old_logp not needed). Not jitted.
  """
  def evaluate(params, teacher_params, batch):
    if cfg.loss_chunk_tokens:
      per_tok = response_jsd(apply_fn, params, teacher_params, batch, cfg)[0]
      return distill.masked_token_mean(per_tok, batch["loss_mask"])
    n = batch["tokens"].shape[1]
    s = response_logits(apply_fn, params, batch["student_ids"], batch["student_mask"], n)
    t = response_logits(apply_fn, teacher_params, batch["teacher_ids"], batch["teacher_mask"], n)
    return distill.generalized_jsd(s, t, batch["loss_mask"], cfg.alpha, cfg.temperature)
  return evaluate


class OPSDTrainer(rl_trainer.RLTrainer):
  """Holds the student state, the frozen teacher params and the jitted functions.

  `step_fn` may be given pre-jitted (`OPSDTrainer.mesh_step_fn` over a mesh); by default the
  update step is jitted plainly with the state donated (`lib.rl.trainer.RLTrainer`).
  """
  kind = "opsd"
  takes_frozen_params = True
  make_step = staticmethod(make_opsd_step)

  @staticmethod
  def minibatch_rows(cfg: OPSDConfig, rows: int) -> int:
    """Rows of one optimizer step for `rows` rows per iteration."""
    return min(cfg.minibatch, rows)

  def __init__(self, apply_fn: ApplyFn, sample_fn: Callable, state: TrainState, tx,
               cfg: OPSDConfig, teacher_params: Any = None, step_fn: Callable | None = None):
    super().__init__(apply_fn, sample_fn, state, tx, cfg, step_fn)
    self.teacher_params = self.frozen_copy(teacher_params)
    # the old log-probs of a rollout, scored in the update's micro-batches (static `micro`)
    self._logp = jax.jit(lambda p, ids, mask, tokens, micro: map_row_chunks(
        lambda i, m, t: response_token_logprobs(apply_fn, p, i, m, t, cfg),
        micro, ids, mask, tokens), static_argnums=4)

  def rollout(self, student_prompt, teacher_prompt, key,
              span_fn: Callable | None = None) -> dict:
    """Student samples one response per row; returns the host batch the update step takes.
    span_fn(tokens, lengths) -> [R, N] 0/1 target-span mask (default: the whole response).

    Args:
      student_prompt: (ids, mask), each [R, Ps] int, left-padded.
      teacher_prompt: (ids, mask), each [R, Pt] int, left-padded, the same R rows.
      key: PRNG key of the sampler.
      span_fn: (tokens [R, N] np.int32, lengths [R] np.int32) -> [R, N] 0/1; it is multiplied
        by the response mask. None: the whole response.
    Returns:
      dict of np.int32 arrays: student_ids, student_mask [R, Ps+N]; teacher_ids, teacher_mask
      [R, Pt+N]; tokens, loss_mask [R, N]; lengths [R] (counting the EOS).
    """
    s_ids, s_mask = (np.asarray(x, np.int32) for x in student_prompt)
    t_ids, t_mask = (np.asarray(x, np.int32) for x in teacher_prompt)
    tokens, lengths = self.sample_fn(self.state.params, s_ids, s_mask, key)
    tokens, lengths = np.asarray(tokens, np.int32), np.asarray(lengths, np.int32)
    resp = (np.arange(tokens.shape[1])[None] < lengths[:, None]).astype(np.int32)
    span = resp if span_fn is None else np.asarray(span_fn(tokens, lengths), np.int32) * resp
    return {"student_ids": np.concatenate([s_ids, tokens], 1),
            "student_mask": np.concatenate([s_mask, resp], 1),
            "teacher_ids": np.concatenate([t_ids, tokens], 1),
            "teacher_mask": np.concatenate([t_mask, resp], 1),
            "tokens": tokens, "loss_mask": span, "lengths": lengths}

  def iteration(self, student_prompt, teacher_prompt, key, span_fn=None) -> dict:
    """One OPSD iteration: sample, record old log-probs, then update_epochs passes of updates.

    Args:
      student_prompt, teacher_prompt, span_fn: as in `rollout`. R must be a multiple of
        min(minibatch, R), and that a multiple of micro_batch (when set).
      key: PRNG key, split into sampling and shuffle keys.
    Returns:
      dict name -> number: the step metrics averaged over all optimizer steps, plus
      response_len_mean, target_span_tokens, train_tokens, tokens_per_s and iteration_s.
    """
    cfg = self.cfg
    t0 = time.perf_counter()
    k_sample, k_shuffle = jax.random.split(key)
    roll = self.rollout(student_prompt, teacher_prompt, k_sample, span_fn)
    lengths = roll.pop("lengths")
    data = {k: jnp.asarray(v) for k, v in roll.items()}
    rows = data["tokens"].shape[0]
    mb = self.minibatch_rows(cfg, rows)
    micro = cfg.micro_batch or mb
    if rows % mb or mb % micro:
      raise ValueError(f"{rows} rows do not split into minibatches of {mb} / micro of {micro}")
    data["old_logp"] = self._logp(self.state.params, data["student_ids"], data["student_mask"],
                                  data["tokens"], micro)
    step = self._update(mb // micro)
    out = []
    for epoch in range(cfg.update_epochs):
      order = np.asarray(jax.random.permutation(jax.random.fold_in(k_shuffle, epoch), rows))
      for start in range(0, rows, mb):
        idx = order[start:start + mb]
        self.state, m = step(self.state, self.teacher_params,
                             jax.tree.map(lambda x: x[idx], data))
        out.append(m)
    metrics = {k: float(np.mean([float(m[k]) for m in out])) for k in out[0]}
    elapsed = time.perf_counter() - t0
    n_tokens = int(roll["student_mask"].sum())
    metrics.update({"response_len_mean": float(lengths.mean()),
                    "target_span_tokens": float(roll["loss_mask"].sum()),
                    "train_tokens": n_tokens, "tokens_per_s": n_tokens * cfg.update_epochs / elapsed,
                    "iteration_s": elapsed})
    return metrics
