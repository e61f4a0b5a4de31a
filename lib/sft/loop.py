"""The one SFT loop: a batch source -> the jitted `lib.sft.step` step, resumable, logged.

    batch_at = sft_batches.epoch_batches(arrays, batch=8, seed=0)      # or any step -> batch fn
    state = TrainState.create(params, tx)
    run = sft_loop.train(apply_fn, state, tx, batch_at, steps, workdir,
                         sft_loop.SFTConfig(target_window=K))
    nnx.update(model, run.state.params)

Every caller (experiments/train_sft.py, GenCoord learned training, ConPAct-R/S, the WM warm start)
brings its own rows and batch layout; the loop owns the step (`lib.sft.step.make_sft_step`,
optionally answer-window and on a data x fsdp mesh), resuming from the latest `lib.train.checkpoint`
under <workdir>/<ckpt_subdir> (the batch of step t depends only on t, so a resumed run equals an
uninterrupted one), TensorBoard scalars (`<prefix>loss`, the mean over the steps since the last
log; `grad_norm`, `target_tokens`, `train_tokens`, `tokens_seen`, `tokens_per_s`, `lr`,
`eval_loss`, of the log step) every `log_every` steps, and a tqdm bar (loss, tokens/s; silent when stderr is not a terminal).
"""
import dataclasses
import time
from typing import Any, Callable, ClassVar

import jax
import numpy as np
import optax
from absl import logging

from lib.models.chunked import LOSS_CHUNK_TOKENS
from lib.parallel import sharding
from lib.run import tb
from lib.run.config_blocks import ConfigBlock
from lib.run.progress import progress
from lib.sft import step as sft
from lib.sft.batches import BatchSource
from lib.train import setup as train_loop
from lib.train.state import ApplyFn, TrainState


@dataclasses.dataclass
class SFTRun:
  """What a call to `train` leaves: the final state and the run's account (all sessions).

  history: (step, mean loss since the previous log) at every logged step since step 0; losses: every step's loss of this
  session only; train_tokens: attention tokens (prompt + target + EOS) of every step so far.
  """
  state: TrainState
  steps: int
  resumed_from: int
  history: list
  losses: list
  train_tokens: int
  wall_s: float
  cpu_s: float
  first_eval_loss: float | None
  last_eval_loss: float | None


def _jit_step(apply_fn, tx, cfg, mesh, state_sharding):
  kw = dict(accum_steps=cfg.accum_steps, target_window=cfg.target_window,
            loss_chunk_tokens=cfg.loss_chunk_tokens)
  if mesh is None:
    return jax.jit(sft.make_sft_step(apply_fn, tx, **kw), donate_argnums=0)
  step_fn = sft.make_sft_step(apply_fn, tx, param_sharding=state_sharding.params,  # FSDP grads
                              **kw)
  return sharding.jit_step(step_fn, mesh, state_sharding)


@dataclasses.dataclass(frozen=True)
class SFTConfig(ConfigBlock):
  """The SFT loop's settings (a `lib.run.config_blocks.ConfigBlock`, as GRPO's and OPSD's are).

  target_window: answer-window step (left-padded rows, every target in the last K tokens).
  accum_steps: micro-batches per step (B must be divisible by it).
  log_every, ckpt_every: logging / checkpoint periods in steps (the last step always does both).
  ckpt_subdir, max_to_keep: checkpoints go to <workdir>/<ckpt_subdir>, this many kept.
  prefix: TensorBoard tag prefix.
  eval_every: steps between `evaluate` calls (0: only before the first and at the last step).
  validate_every: steps between `validate` calls (a multiple of log_every; 0: last step only).
  validate_from: the first `validate` call is at validate_from + validate_every (a multiple of
    log_every; e.g. the end of a drill lead, so validations fall on epochs of the main rows).
  start_fresh: move existing checkpoints aside and train from step 0 (`lib.train.setup.resume`).
  loss_chunk_tokens: the output head and loss run this many token positions at a time
    (`lib.models.chunked`: no [B, T, V] logits); 0 = full logits.
  """
  block_name: ClassVar[str] = "sft"
  target_window: int = 0
  accum_steps: int = 1
  log_every: int = 10
  ckpt_every: int = 100
  ckpt_subdir: str = "ckpt"
  max_to_keep: int = 2
  prefix: str = "sft/"
  eval_every: int = 0
  validate_every: int = 0
  validate_from: int = 0
  start_fresh: bool = False
  loss_chunk_tokens: int = LOSS_CHUNK_TOKENS


def train(apply_fn: ApplyFn, state: TrainState, tx: optax.GradientTransformation,
          batch_at: BatchSource, steps: int, workdir: str, cfg: SFTConfig = SFTConfig(), *,
          mesh: Any = None, state_sharding: Any = None,
          lr_schedule: Callable[[int], Any] | None = None,
          evaluate: Callable[[Any], float] | None = None,
          validate: Callable[[int, Any], tuple[dict, bool]] | None = None) -> SFTRun:
  """Runs SFT steps `start..steps-1` (start = the latest checkpoint's step, 0 without one).

  Args:
    apply_fn: the `lib.train.state` apply function of the model.
    state: the fresh train state (also the restore template; on `mesh`, already placed on
      `state_sharding`).
    tx: the optimizer `state` was created with.
    batch_at: step -> {input_ids, attention_mask, loss_mask} int32 [B, T] (lib/sft/batches.py).
    steps: total optimizer steps of the run.
    workdir: checkpoints go to <workdir>/<cfg.ckpt_subdir>, TensorBoard events to <workdir>/tb.
    cfg: the loop's settings.
    mesh, state_sharding: a `lib.parallel.sharding` mesh and the state's shardings (None: one
      device).
    lr_schedule: step -> learning rate, logged when given.
    evaluate: params -> held-out loss, run before the first step and every `cfg.eval_every` steps.
    validate: (step, params) -> (scalars, stop), run every `cfg.validate_every` steps and at the
      last step; the scalars are logged as `<prefix>val_<name>`, and `stop` ends the run at that
      step (early stopping: the step is checkpointed with `stopped_at`, so a resumed run ends
      there too instead of training on).
  Returns:
    SFTRun (the caller writes `run.state.params` into its model).
  """
  log_every, ckpt_every = cfg.log_every, cfg.ckpt_every
  prefix, eval_every, validate_every = cfg.prefix, cfg.eval_every, cfg.validate_every
  validate_from = cfg.validate_from
  if validate is not None and (validate_every % log_every or validate_from % log_every):
    raise ValueError(f"validate_every={validate_every} and validate_from={validate_from} must "
                     f"each be a multiple of log_every={log_every}")
  step = _jit_step(apply_fn, tx, cfg, mesh, state_sharding)
  ckpt, state, start, meta = train_loop.resume(workdir, state, max_to_keep=cfg.max_to_keep,
                                                subdir=cfg.ckpt_subdir,
                                                start_fresh=cfg.start_fresh)
  history = [tuple(h) for h in meta.get("history", [])]
  tokens = int(meta.get("tokens_seen", 0))
  first_eval = meta.get("first_eval_loss")
  if evaluate is not None and first_eval is None:
    first_eval = float(evaluate(state.params))
  last_eval = meta.get("last_eval_loss")
  stopped_at = meta.get("stopped_at")
  if stopped_at is not None:          # an early-stopped run is finished: train no further
    steps = start
  prior_wall, prior_cpu = float(meta.get("wall_s", 0.0)), float(meta.get("cpu_s", 0.0))
  t0, c0 = time.perf_counter(), time.process_time()
  window_t, window_tokens = t0, tokens
  losses, pending = [], []      # device scalars are read at log steps, so dispatch runs ahead
  bar = progress(total=steps, initial=start, desc=prefix.rstrip("/") or "sft")
  for it in range(start, steps):
    batch = batch_at(it)
    tokens += int(np.asarray(batch["attention_mask"]).sum())
    if mesh is not None:
      batch = sharding.shard_batch(batch, mesh)
    state, m = step(state, batch)
    pending.append(m["loss"])
    bar.update(1)
    done = it + 1
    if done % log_every == 0 or done == steps:
      window = [float(x) for x in pending]
      losses += window
      pending = []
      now = time.perf_counter()
      metrics = {k: float(v) for k, v in m.items()}
      # The mean over the steps since the last log, not the log step's own loss: with
      # interleaved batch sources (lib.sft.batches.interleave) the log step would always be a
      # batch of the same source.
      metrics["loss"] = sum(window) / len(window)
      metrics.update(tokens_seen=tokens,
                     tokens_per_s=(tokens - window_tokens) / max(now - window_t, 1e-9))
      if lr_schedule is not None:
        metrics["lr"] = float(lr_schedule(it))
      if evaluate is not None and ((eval_every and done % eval_every == 0) or done == steps):
        last_eval = metrics["eval_loss"] = float(evaluate(state.params))
      if validate is not None and ((validate_every and done > validate_from
                                    and (done - validate_from) % validate_every == 0)
                                   or done == steps):
        scalars, stop = validate(done, state.params)
        metrics.update({f"val_{k}": float(v) for k, v in scalars.items()})
        if stop:
          stopped_at = done
      history.append((done, metrics["loss"]))
      tb.scalars(workdir, done, metrics, prefix)
      bar.set_postfix(loss=f"{metrics['loss']:.4f}", tok_s=f"{metrics['tokens_per_s']:.0f}")
      logging.info("%s step %d/%d: %s", prefix.rstrip("/"), done, steps,
                   {k: round(v, 4) for k, v in metrics.items()})
      window_t, window_tokens = now, tokens
    if done % ckpt_every == 0 or done == steps or stopped_at == done:
      ckpt.save(done, state, metadata={
          "history": history, "tokens_seen": tokens, "first_eval_loss": first_eval,
          "last_eval_loss": last_eval, "wall_s": prior_wall + time.perf_counter() - t0,
          "cpu_s": prior_cpu + time.process_time() - c0, "stopped_at": stopped_at})
    if stopped_at == done:
      steps = done
      break
  bar.close()
  ckpt.close()
  losses += [float(x) for x in pending]
  return SFTRun(state=state, steps=steps, resumed_from=start, history=history, losses=losses,
                train_tokens=tokens, wall_s=prior_wall + time.perf_counter() - t0,
                cpu_s=prior_cpu + time.process_time() - c0, first_eval_loss=first_eval,
                last_eval_loss=last_eval)
