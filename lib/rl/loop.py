"""The one RL loop: resume, build the trainer, iterate, evaluate, log, checkpoint (GRPO and OPSD).

    def make_trainer(state, initial_params):   # after resuming; the reference: the initial model
      return GRPOTrainer(apply_fn, sample_fn, state, tx, cfg, ref_params=initial_params)
    def iterate(trainer, it):                  # the caller owns prompts, rewards and keys
      return trainer.iteration(*prompts(it), reward_fn(it), jax.random.fold_in(key, it))
    run = rl_loop.train(state, make_trainer, iterate, iterations, workdir,
                        rl_loop.RLLoopConfig(prefix="grpo/"), record=lambda m: m["reward_mean"])

Every RL entry point (experiments/train_grpo.py, experiments/train_opsd.py, the world-model
conditions of agents/wm/train.py) brings its own trainer and iteration; the loop owns resuming from
the latest `lib.train.checkpoint` under <workdir>/<ckpt_subdir> (the prompts and keys of iteration
`it` depend only on `it`, so a resumed run equals an uninterrupted one), TensorBoard scalars
(`<prefix><metric>` of every iteration, with `tokens_seen` and the evaluation's scalars), absl
logging every `log_every` iterations, a tqdm bar, and the run's account in the checkpoint metadata:
tokens seen, the caller's per-iteration records, the first and last evaluation, and the wall / CPU
seconds of all sessions. `lib.sft.loop.train` is the same loop for SFT steps.
"""
import dataclasses
import time
from typing import Any, Callable, ClassVar

import jax
from absl import logging

from lib.run import tb
from lib.run.config_blocks import ConfigBlock
from lib.run.progress import progress, show_step
from lib.train import setup as train_setup
from lib.train.state import TrainState


@dataclasses.dataclass
class RLRun:
  """What a call to `train` leaves: the trainer, its final state and the run's account.

  records: the caller's record of every iteration since iteration 0 (all sessions); metrics: the
  metrics of this session's iterations only; first_eval / last_eval: the evaluation's scalars
  before the first iteration and at the last evaluated one (None without `evaluate`).
  """
  trainer: Any
  state: TrainState
  iterations: int
  resumed_from: int
  records: list
  metrics: list
  tokens_seen: int
  wall_s: float
  cpu_s: float
  first_eval: dict | None
  last_eval: dict | None
  prior_s: tuple = dataclasses.field(default=(0.0, 0.0), repr=False)
  started: tuple = dataclasses.field(default=(0.0, 0.0), repr=False)

  def elapsed(self) -> tuple[float, float]:
    """(wall, cpu) seconds of all sessions up to now, the caller's work after the loop included.

    Returns:
      (wall seconds, process CPU seconds).
    """
    return (self.prior_s[0] + time.perf_counter() - self.started[0],
            self.prior_s[1] + time.process_time() - self.started[1])


def _free(template: Any, kept: Any) -> None:
  """Deletes the template's device buffers that `kept` does not share: a resumed run no longer
  needs the fresh state (its params were handed to `make_trainer`, which copies what it keeps), and
  at scale its optimizer state is as large as the restored one's."""
  shared = {id(x) for x in jax.tree.leaves(kept)}
  for x in jax.tree.leaves(template):
    if isinstance(x, jax.Array) and id(x) not in shared and not x.is_deleted():
      x.delete()


@dataclasses.dataclass(frozen=True)
class RLLoopConfig(ConfigBlock):
  """The RL loop's settings (a `lib.run.config_blocks.ConfigBlock`, as `lib.sft.loop.SFTConfig`).

  eval_every: evaluation period in iterations (0: only before the first and at the last).
  log_every: absl logging period in iterations (TensorBoard gets every iteration).
  ckpt_every: checkpoint period in iterations (the last iteration is always saved).
  ckpt_subdir, max_to_keep: checkpoints go to <workdir>/<ckpt_subdir>, this many kept.
  prefix: TensorBoard tag prefix, e.g. "grpo/".
  desc: name of the progress bar and log lines ("": the prefix without its "/").
  start_fresh: move existing checkpoints aside and train from iteration 0
    (`lib.train.setup.resume`).
  """
  block_name: ClassVar[str] = "rl_loop"
  eval_every: int = 0
  log_every: int = 10
  ckpt_every: int = 100
  ckpt_subdir: str = "ckpt"
  max_to_keep: int = 3
  prefix: str = "rl/"
  desc: str = ""
  start_fresh: bool = False


def train(state: TrainState, make_trainer: Callable[[TrainState, Any], Any],
          iterate: Callable[[Any, int], dict], iterations: int, workdir: str,
          cfg: RLLoopConfig = RLLoopConfig(), *, record: Callable[[dict], Any] | None = None,
          evaluate: Callable[[Any], dict] | None = None,
          started: tuple[float, float] | None = None) -> RLRun:
  """Runs RL iterations `start..iterations-1` (start = the latest checkpoint's, 0 without one).

  Args:
    state: the fresh train state: the restore template and the initial model. It is consumed like
      a donated argument: a fresh run's first update donates it, a resumed run frees it once the
      trainer is built.
    make_trainer: (state, initial_params) -> trainer, called once after resuming with the state
      to train and the fresh state's params (GRPO's reference, OPSD's teacher: the initial model,
      not the resumed one; copy what is kept, as `lib.rl.trainer.RLTrainer.frozen_copy` does). The
      trainer has a `state` (the `TrainState` saved at checkpoints); it may be None when the run
      has no iterations left (then `RLRun.state` is the resumed state).
    iterate: (trainer, it) -> host metrics of iteration `it` (`trainer.iteration(...)`; the caller
      draws that iteration's prompts, rewards and keys from `it`), with `train_tokens`.
    iterations: total iterations of the run.
    workdir: checkpoints go to <workdir>/<cfg.ckpt_subdir>, TensorBoard events to <workdir>/tb.
    cfg: the loop's settings.
    record: metrics -> a JSON-serialisable record of the iteration (e.g. its mean reward), kept
      for every iteration in the checkpoint metadata; None: no records.
    evaluate: trainer -> {name: scalar}, run before the first iteration (once per run), every
      `cfg.eval_every` iterations and at the last one; its scalars join that iteration's metrics.
    started: (time.perf_counter(), time.process_time()) when this session began, so its set-up
      counts in `wall_s` / `cpu_s`; None: now.
  Returns:
    RLRun (its `state` is the trainer's final state).
  """
  t0, c0 = started or (time.perf_counter(), time.process_time())
  prefix, eval_every, log_every, ckpt_every = (
      cfg.prefix, cfg.eval_every, cfg.log_every, cfg.ckpt_every)
  desc = cfg.desc or prefix.rstrip("/") or "rl"
  fresh = state
  ckpt, state, start, meta = train_setup.resume(workdir, state, max_to_keep=cfg.max_to_keep,
                                                subdir=cfg.ckpt_subdir,
                                                start_fresh=cfg.start_fresh)
  trainer = make_trainer(state, fresh.params)
  if start:
    _free(fresh, state)
  del fresh
  records = list(meta.get("records", []))
  tokens = int(meta.get("tokens_seen", 0))
  first_eval, last_eval = meta.get("first_eval"), meta.get("last_eval")
  if evaluate is not None and first_eval is None:
    first_eval = {k: float(v) for k, v in evaluate(trainer).items()}
  prior = (float(meta.get("wall_s", 0.0)), float(meta.get("cpu_s", 0.0)))
  seconds = lambda: (prior[0] + time.perf_counter() - t0, prior[1] + time.process_time() - c0)
  session = []
  bar = progress(total=iterations, initial=start, desc=desc, unit="it")
  for it in range(start, iterations):
    m = iterate(trainer, it)
    done = it + 1
    tokens += int(m["train_tokens"])
    m["tokens_seen"] = tokens
    if evaluate is not None and ((eval_every and done % eval_every == 0) or done == iterations):
      last_eval = {k: float(v) for k, v in evaluate(trainer).items()}
      m.update(last_eval)
    if record is not None:
      records.append(record(m))
    session.append(m)
    tb.scalars(workdir, done, m, prefix)
    show_step(bar, m)
    if done % log_every == 0:
      logging.info("%s iteration %d: %s", desc, done, {k: round(v, 4) for k, v in m.items()})
    if done % ckpt_every == 0 or done == iterations:
      wall, cpu = seconds()
      ckpt.save(done, trainer.state, metadata={
          "records": records, "tokens_seen": tokens, "first_eval": first_eval,
          "last_eval": last_eval, "wall_s": wall, "cpu_s": cpu})
  bar.close()
  ckpt.close()
  if evaluate is not None and last_eval is None:   # no iteration was ever evaluated
    last_eval = {k: float(v) for k, v in evaluate(trainer).items()}
  wall, cpu = seconds()
  return RLRun(trainer=trainer, state=state if trainer is None else trainer.state,
               iterations=iterations, resumed_from=start, records=records, metrics=session,
               tokens_seen=tokens, wall_s=wall, cpu_s=cpu, first_eval=first_eval,
               last_eval=last_eval, prior_s=prior, started=(t0, c0))
