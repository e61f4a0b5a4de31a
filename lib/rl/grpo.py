"""GRPO trainer: prompts -> G samples each -> rewards -> group advantages -> clipped updates with a
k3 KL to a frozen reference. The losses are in `lib/rl/losses.py`; this module wires them to a
model.

    trainer = GRPOTrainer(apply_fn, sample_fn, params, tx, config.grpo)
    metrics = trainer.iteration(prompt_ids, prompt_mask, reward_fn, key)

apply_fn(params, ids, mask) -> logits (see lib/train/state.py); sample_fn(params, prompt_ids,
prompt_mask, key) -> (tokens [R, N] int32, lengths [R] int32), rows padded after their EOS (see
`nnx_sample_fn`); reward_fn(tokens [B*G, N] np, lengths [B*G] np) -> rewards [B, G] (host side,
so embedding models, parsers and environments can score text).
Hot paths (log-probs, the update step) are jitted once per shape; nothing runs per token in Python.
"""
import dataclasses
import time
from typing import Any, Callable, ClassVar

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from lib.generate import sampling
from lib.models.chunked import LOSS_CHUNK_TOKENS, chunked_token_logprobs
from lib.rl import losses as rl, trainer as rl_trainer
from lib.run.config_blocks import ConfigBlock
from lib.train import optim
from lib.train.state import ApplyFn, TrainState, map_row_chunks


@dataclasses.dataclass(frozen=True)
class GRPOConfig(ConfigBlock):
  """Defaults follow the audit's Table 6 (ALFWorld GRPO) where it gives one; `from_config` reads
  it from the `grpo` config block."""
  block_name: ClassVar[str] = "grpo"
  group_size: int = 8             # rollout n
  temperature: float = 1.0        # sampling temperature; log-probs use the same scaling
  clip_eps: float = 0.2
  dual_clip_c: float = 3.0
  kl_coef: float = 0.01
  entropy_coef: float = 0.001
  agg: str = "token-mean"
  update_epochs: int = 1
  minibatch_prompts: int = 32     # prompts per optimizer step (= batch: one on-policy update)
  micro_batch: int = 0            # rows per accumulation micro-batch; 0 = whole minibatch
  adv_eps: float = 1e-6
  scale_advantages: bool = True
  permute_scores: bool = False    # GT-PERM / MIS-PERM: shuffle scores inside each group
  loss_chunk_tokens: int = LOSS_CHUNK_TOKENS  # head + softmax per token chunk; 0 = full logits
  rollout_dtype: str = ""         # "bfloat16": sample from a bf16 copy (bf16 KV cache)
  prefill_rows: int = 0           # > 0: prefill the rollout this many rows at a time
  frozen_dtype: str = ""          # "bfloat16": hold the KL reference in bf16 (exact where the
                                  # model computes in bf16: apply_fn casts it there anyway)


def response_logprobs(apply_fn: ApplyFn, params: Any, input_ids: jax.Array,
                      attention_mask: jax.Array, n_response: int, temperature: float = 1.0,
                      loss_chunk_tokens: int = LOSS_CHUNK_TOKENS,
                      with_entropy: bool = True) -> tuple[jax.Array, jax.Array | None]:
  """Log-probs and entropies of the last `n_response` tokens of [R, P + N] sequences -> [R, N].

  The output head runs on the last N + 1 positions only (`apply_fn(..., last=N + 1)`; position
  t scores token t + 1, so the last position is dropped): [R, N, V] logits, never [R, P + N, V].
  One float32 log-softmax serves both outputs:

      logp_all = log_softmax(logits / temperature)          [R, N, V]
      logp     = logp_all[r, t, input_ids[r, P + t]]
      entropy  = -sum_v exp(logp_all) logp_all

  With `loss_chunk_tokens` > 0 the head and softmax run that many positions at a time on the
  hidden states (`apply_fn(..., hidden=True)`, `lib.models.chunked`): [chunk, V] logits at most.

  Args:
    apply_fn: (params, ids, mask, last=K) -> [R, K, V] logits of the last K positions.
    params: model params pytree.
    input_ids: [R, P + N] int32 prompt followed by response tokens.
    attention_mask: [R, P + N] int 0/1.
    n_response: N, the number of trailing response tokens scored.
    temperature: logits are divided by it before the softmax (the sampling temperature).
    loss_chunk_tokens: positions per head chunk; 0 = the full [R, N, V] logits.
    with_entropy: False returns None for the entropies (scoring passes).
  Returns:
    (logp, entropy): [R, N] float32 log-probs of the response tokens and [R, N] float32
    entropies of the temperature-scaled next-token distributions at those positions.
  """
  tokens = input_ids[:, -n_response:]
  if loss_chunk_tokens:
    hidden, head_w = apply_fn(params, input_ids, attention_mask, last=n_response + 1, hidden=True)
    return chunked_token_logprobs(hidden[:, :-1], head_w, tokens, chunk_tokens=loss_chunk_tokens,
                                  temperature=temperature, with_entropy=with_entropy)
  logits = apply_fn(params, input_ids, attention_mask, last=n_response + 1)[:, :-1]
  logp_all = jax.nn.log_softmax(logits.astype(jnp.float32) / temperature, axis=-1)
  logp = jnp.take_along_axis(logp_all, tokens[..., None].astype(jnp.int32), axis=-1)[..., 0]
  return logp, (-(jnp.exp(logp_all) * logp_all).sum(axis=-1) if with_entropy else None)


def rollout_logprobs(apply_fn: ApplyFn, params: Any, ref_params: Any, input_ids: jax.Array,
                     attention_mask: jax.Array, n_response: int, temperature: float = 1.0,
                     with_old: bool = True, micro_rows: int = 0,
                     loss_chunk_tokens: int = LOSS_CHUNK_TOKENS
                     ) -> tuple[jax.Array | None, jax.Array]:
  """The sampling policy's and the frozen reference's log-probs of a rollout, in one program.

  With `micro_rows`, the rows are scored `micro_rows` at a time (`lax.map` over chunks), so the
  [rows, N, V] float32 logits of a paper-scale rollout (256 x 512 x 152k: 80 GB) exist for one
  chunk at a time, as in the update step's micro-batches; the result is the same.

  Args:
    apply_fn, input_ids, attention_mask, n_response, temperature: as `response_logprobs`.
    params: the current (sampling) policy's params.
    ref_params: the frozen reference's params.
    with_old: False skips the sampling policy's pass (an on-policy update reads its own
      log-probs as old_logp, see `make_grpo_step`).
    micro_rows: rows per scoring chunk (`lib.train.state.map_row_chunks`); 0: all at once.
    loss_chunk_tokens: token positions per head chunk inside each row chunk; 0: full logits.
  Returns:
    (old_logp or None, ref_logp), each [R, N] float32.
  """
  def score(p):
    return map_row_chunks(lambda ids, mask: response_logprobs(
        apply_fn, p, ids, mask, n_response, temperature, loss_chunk_tokens, with_entropy=False)[0],
        micro_rows, input_ids, attention_mask)

  return (score(params) if with_old else None), score(ref_params)


def make_grpo_step(apply_fn: ApplyFn, tx: optax.GradientTransformation, cfg: GRPOConfig,
                   accum_steps: int = 1, param_sharding: Any = None):
  """step(state, minibatch) -> (state, metrics); minibatch rows [R, ...] with keys input_ids,
  attention_mask [R, P+N], response_mask, ref_logp [R, N], advantages [R] and, off-policy,
  old_logp [R, N] (without it the update is on-policy: old_logp = this step's own log-probs,
  held constant, so ratio = 1 and no separate pass over the sampling policy is needed).
  Micro-batch losses are averaged (weight 1 each, as verl does).

  Args:
    apply_fn: (params, ids, mask, last=K) -> logits of the last K positions.
    tx: the optimizer.
    cfg: GRPOConfig; temperature and the `rl.grpo_loss` knobs are read from it.
    accum_steps: micro-batches per step; R must be divisible by it.
    param_sharding: the params' sharding pytree on a mesh (FSDP), or None: micro-batches are
      then split over the batch devices and gradients kept in the params' shards
      (`optim.accumulate_grads`).
  Returns:
    step(state: TrainState, batch: dict) -> (TrainState, metrics), not jitted. Batch dtypes:
    int32 ids and masks, float32 log-probs and advantages. metrics: the `rl.grpo_loss` metrics
    averaged over micro-batches, plus loss and grad_norm (scalars).
  """
  def loss_fn(params, mb):
    n = mb["ref_logp"].shape[1]
    logp, entropy = response_logprobs(apply_fn, params, mb["input_ids"], mb["attention_mask"], n,
                                      cfg.temperature, cfg.loss_chunk_tokens)
    # On-policy (no old_logp given): the sampling policy is these params, so its log-probs are
    # this forward's, held constant (verl's on-policy shortcut; no second forward pass).
    old = mb["old_logp"] if "old_logp" in mb else jax.lax.stop_gradient(logp)
    loss, metrics = rl.grpo_loss(
        logp, old, mb["ref_logp"], mb["advantages"], mb["response_mask"],
        clip_eps=cfg.clip_eps, dual_clip_c=cfg.dual_clip_c, kl_coef=cfg.kl_coef,
        entropy=entropy, entropy_coef=cfg.entropy_coef, agg=cfg.agg)
    return loss, (jnp.ones((), jnp.float32), metrics)

  def step(state: TrainState, batch: dict):
    micro = jax.tree.map(
        lambda x: x.reshape(accum_steps, x.shape[0] // accum_steps, *x.shape[1:]), batch)
    loss, grads, metrics = optim.accumulate_grads(loss_fn, state.params, micro, param_sharding)
    updates, opt_state = tx.update(grads, state.opt_state, state.params)
    params = optax.apply_updates(state.params, updates)
    metrics = {**metrics, "loss": loss, "grad_norm": optax.tree.norm(grads)}
    metrics.pop("weight")
    return state.replace(step=state.step + 1, params=params, opt_state=opt_state), metrics

  return step


def nnx_sample_fn(model: nnx.Module, *, max_new_tokens: int, temperature: float = 1.0,
                  top_p: float = 1.0, eos_ids=(), pad_id: int = 0, weights_dtype: str = "",
                  prefill_rows: int = 0) -> Callable:
  """sample_fn over `lib.generate.sampling.generate` for a model split by `nnx_apply_fn`.

  Args:
    model: the NNX model; its non-Param state is captured, its params come with each call.
    max_new_tokens: N, the response width.
    temperature, top_p: sampling settings.
    eos_ids: token ids that end a row.
    pad_id: token written after a row has ended.
    weights_dtype: "" samples from the params as they are; "bfloat16" from a bf16 copy of them
      (and a bf16 KV cache), as `lib.generate.sampling.generate` says.
    prefill_rows: > 0 prefills that many rows at a time (it must divide R).
  Returns:
    sample_fn(params, prompt_ids [R, P] int32 left-padded, prompt_mask [R, P], key) ->
    (tokens [R, N] int32, lengths [R] int32 counting the EOS).
  """
  graphdef, _, rest = nnx.split(model, nnx.Param, ...)

  def sample_fn(params, prompt_ids, prompt_mask, key):
    out = sampling.generate(graphdef, nnx.merge_state(params, rest), prompt_ids, prompt_mask, key,
                            max_new_tokens=max_new_tokens, temperature=temperature, top_p=top_p,
                            eos_ids=tuple(eos_ids), pad_id=pad_id, weights_dtype=weights_dtype,
                            prefill_rows=prefill_rows)
    return out.tokens, out.lengths

  return sample_fn


class GRPOTrainer(rl_trainer.RLTrainer):
  """Holds the train state, the frozen reference params and the jitted functions.

  `step_fn` may be given pre-jitted (`GRPOTrainer.mesh_step_fn` over a mesh); by default the
  update step is jitted plainly with the state donated (`lib.rl.trainer.RLTrainer`).
  """
  kind = "grpo"
  make_step = staticmethod(make_grpo_step)

  @staticmethod
  def minibatch_rows(cfg: GRPOConfig, rows: int) -> int:
    """Rows of one optimizer step for `rows` prompts per iteration: whole groups."""
    return min(cfg.minibatch_prompts, rows) * cfg.group_size

  def __init__(self, apply_fn: ApplyFn, sample_fn: Callable, state: TrainState, tx,
               cfg: GRPOConfig, ref_params: Any = None, step_fn: Callable | None = None):
    super().__init__(apply_fn, sample_fn, state, tx, cfg, step_fn)
    self.ref_params = self.frozen_copy(ref_params)
    self._logprobs = jax.jit(rollout_logprobs, static_argnums=(0, 5, 6, 7, 8, 9))

  def rollout(self, prompt_ids, prompt_mask, key) -> dict:
    """G samples per prompt -> host dict of [B*G, ...] arrays (rows grouped by prompt).

    Args:
      prompt_ids: [B, P] int left-padded prompt tokens.
      prompt_mask: [B, P] int 0/1.
      key: PRNG key of the sampler.
    Returns:
      dict of np.int32 arrays, row b*G + g holding prompt b's g-th sample: input_ids and
      attention_mask [B*G, P+N]; response_mask [B*G, N] (1 on each row's first `lengths`
      tokens); tokens [B*G, N]; lengths [B*G].
    """
    g = self.cfg.group_size
    ids = np.repeat(np.asarray(prompt_ids, np.int32), g, axis=0)
    pmask = np.repeat(np.asarray(prompt_mask, np.int32), g, axis=0)
    tokens, lengths = self.sample_fn(self.state.params, ids, pmask, key)
    tokens, lengths = np.asarray(tokens, np.int32), np.asarray(lengths, np.int32)
    resp_mask = (np.arange(tokens.shape[1])[None] < lengths[:, None]).astype(np.int32)
    return {"input_ids": np.concatenate([ids, tokens], 1),
            "attention_mask": np.concatenate([pmask, resp_mask], 1),
            "response_mask": resp_mask, "tokens": tokens, "lengths": lengths}

  def iteration(self, prompt_ids, prompt_mask, reward_fn: Callable, key: jax.Array) -> dict:
    """One GRPO iteration over a batch of B prompts; returns host metrics for logging.

    Samples, scores, computes the reference's (and, unless the update is on-policy: one epoch,
    one minibatch, the sampling policy's) log-probs once, then runs update_epochs passes of
    optimizer steps over minibatches of whole groups.

    Args:
      prompt_ids: [B, P] int left-padded prompt tokens; B must be a multiple of
        min(minibatch_prompts, B).
      prompt_mask: [B, P] int 0/1.
      reward_fn: (tokens [B*G, N] np.int32, lengths [B*G] np.int32) -> [B, G] rewards.
      key: PRNG key, split into sampling, score-permutation and shuffle keys.
    Returns:
      dict name -> number: the step metrics averaged over all optimizer steps, plus reward_mean,
      reward_std, zero_std_group_frac (of the raw scores), response_len_mean/max,
      train_tokens, tokens_per_s, rollout_s and iteration_s.
    """
    cfg = self.cfg
    b = np.asarray(prompt_ids).shape[0]
    rows = b * cfg.group_size
    mb_rows = self.minibatch_rows(cfg, b)
    if rows % mb_rows:
      raise ValueError(f"{b} prompts do not split into minibatches of {cfg.minibatch_prompts}")
    micro = cfg.micro_batch or mb_rows
    if mb_rows % micro:
      raise ValueError(f"minibatch of {mb_rows} rows does not split into micro-batches of {micro}")
    t0 = time.perf_counter()
    k_sample, k_perm, k_shuffle = jax.random.split(key, 3)
    roll = self.rollout(prompt_ids, prompt_mask, k_sample)
    scores = np.asarray(reward_fn(roll["tokens"], roll["lengths"]), np.float32)
    if scores.shape != (b, cfg.group_size):
      raise ValueError(f"reward_fn returned {scores.shape}, expected {(b, cfg.group_size)}")
    used = np.asarray(rl.permute_within_group(jnp.asarray(scores), k_perm)) \
        if cfg.permute_scores else scores
    adv = np.asarray(rl.group_advantages(used, eps=cfg.adv_eps, scale=cfg.scale_advantages))
    n = roll["tokens"].shape[1]
    dev = {k: jnp.asarray(roll[k]) for k in ("input_ids", "attention_mask", "response_mask")}
    # One update over the whole batch is on-policy: the step reads its own log-probs as old_logp,
    # so only the reference is scored here; otherwise both, in one program.
    on_policy = cfg.update_epochs == 1 and mb_rows == rows
    # scored in the update's micro-batches: one chunk's [micro, N, V] logits at a time
    old_logp, ref_logp = self._logprobs(self.apply_fn, self.state.params, self.ref_params,
                                        dev["input_ids"], dev["attention_mask"], n,
                                        cfg.temperature, not on_policy, micro,
                                        cfg.loss_chunk_tokens)
    data = {**dev, "ref_logp": ref_logp, "advantages": jnp.asarray(adv.reshape(-1)),
            **({} if on_policy else {"old_logp": old_logp})}
    t_roll = time.perf_counter() - t0

    step = self._update(mb_rows // micro)
    step_metrics = []
    for epoch in range(cfg.update_epochs):
      # Shuffle whole groups so each minibatch holds complete groups.
      order = np.asarray(jax.random.permutation(jax.random.fold_in(k_shuffle, epoch), b))
      row_order = (order[:, None] * cfg.group_size + np.arange(cfg.group_size)).reshape(-1)
      for start in range(0, rows, mb_rows):
        idx = row_order[start:start + mb_rows]
        self.state, m = step(self.state, jax.tree.map(lambda x: x[idx], data))
        step_metrics.append(m)
    metrics = {k: float(np.mean([float(m[k]) for m in step_metrics])) for k in step_metrics[0]}
    elapsed = time.perf_counter() - t0
    n_tokens = int(roll["attention_mask"].sum())
    metrics.update({
        "reward_mean": float(scores.mean()), "reward_std": float(scores.std()),
        "zero_std_group_frac": float(np.mean(scores.std(axis=1) == 0)),
        "response_len_mean": float(roll["lengths"].mean()),
        "response_len_max": float(roll["lengths"].max()),
        "train_tokens": n_tokens, "tokens_per_s": n_tokens * cfg.update_epochs / elapsed,
        "rollout_s": t_roll, "iteration_s": elapsed,
    })
    return metrics
