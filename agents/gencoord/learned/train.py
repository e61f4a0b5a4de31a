"""SFT of a commitment model: a small Qwen3 from scratch (or a local checkpoint), resumable.

Config blocks (all fields required; defaults live in the config files):
  model: the one `model` block (lib/models/model_setup.py); from scratch, the vocabulary, EOS
         and pad are the DSL tokenizer's
  train: epochs, batch, lr, warmup_frac, schedule, decay_frac (lib.train.optim.lr_schedule),
         weight_decay, clip_norm, log_every, ckpt_every,
         accum_steps (micro-batches per update; the gradient is that of the whole batch)
The optimizer is the paper's recipe (AdamW, cosine with warm-up, grad-norm clip, weight decay),
the loss is target-and-EOS causal LM on the answer window (`lib.sft.step`), batches are seeded epoch
permutations (`lib.sft.batches.epoch_batches`), the loop is `lib.sft.loop.train`, the kept model
is the final step. Checkpoints carry the loss history, so a resumed run still plots its whole
curve.
"""
import jax
import numpy as np
from flax import nnx

from lib.sft import batches as sft_batches, loop as sft_loop
from lib.train import optim, setup as train_loop


def drill_lead_steps(drill: dict | None, train_config) -> int:
  """Steps of drill batches alone before the full rows (`train.drill.lead_epochs` epochs of the
  drill rows at `train.drill.batch`; 0 without a drill or a lead)."""
  lead_epochs = train_config.drill.get("lead_epochs", 0) if drill is not None else 0
  if not lead_epochs:
    return 0
  per = sft_batches.steps_per_epoch(int(drill["input_ids"].shape[0]), train_config.drill.batch)
  every = train_config.log_every         # a whole number of log steps: validations follow it
  return max(1, round(per * lead_epochs / every)) * every


def train_sft(arrays: dict, tokenizer, config, workdir: str, seed: int, tag: str = "sft",
              early_stopping=None, groups=None, drill=None):
  """Trains `config.model` on `arrays` (`lib.sft.chat_rows.encode_rows`, left-padded).

  Args:
    arrays: left-padded SFT arrays with `target_window` (lib.sft.batches.left_padded layout).
    tokenizer: the tokenizer the rows were encoded with (gives a from-scratch model its vocab).
    config: run config with `model` and `train` blocks.
    workdir: checkpoints (<workdir>/ckpt) and TensorBoard events of this model.
    seed: initialisation and data-order seed.
    tag: TensorBoard tag prefix.
    early_stopping: an `agents.gencoord.learned.validation.EarlyStopping`, or None (train the
      whole budget).
    groups: optional group id per row (`sft_rows.contrast_groups`): batches of whole groups.
    drill: optional left-padded arrays of short-context drill rows (agents/gencoord/learned/
      drill.py): every other step is a drill batch of `train.drill.batch` rows, so the budget
      is twice `train.epochs` epochs' steps of `arrays`, after `train.drill.lead_epochs`
      epochs of drill batches alone (`drill_lead_steps`).
  Returns:
    (model, model_config, report); report: steps, rows, epochs, batch, train_tokens (prompt +
    target + EOS occurrences), wall_s, cpu_s, history [(step, loss)], resumed_from, params.
  """
  c = config.train
  n = arrays["input_ids"].shape[0]
  sources = [sft_batches.epoch_batches(arrays, c.batch, seed, groups)]
  window = arrays["target_window"]
  lead = 0
  if drill is not None:
    sources.append(sft_batches.epoch_batches(drill, c.drill.batch, seed))
    window = max(window, drill["target_window"])
    lead = drill_lead_steps(drill, c)
  total = sft_batches.steps_per_epoch(n, c.batch, groups) * c.epochs * len(sources) + lead
  tx = optim.adamw(lr=c.lr, total_steps=total, warmup_frac=c.warmup_frac,
                   schedule=c.schedule, decay_frac=c.decay_frac,
                   weight_decay=c.weight_decay, clip_norm=c.clip_norm)
  # config.mesh (scale=paper): the state in FSDP shards over its devices
  model, apply_fn, state, mesh, state_sh = train_loop.setup(config, tx, seed, tokenizer=tokenizer)
  settings = sft_loop.SFTConfig(
      target_window=window, log_every=c.log_every, ckpt_every=c.ckpt_every,
      max_to_keep=2, prefix=f"{tag}/", accum_steps=c.accum_steps,
      validate_every=early_stopping.every if early_stopping else 0,
      validate_from=lead)
  run = sft_loop.train(apply_fn, state, tx,
                       sft_batches.lead_then_interleave(sources, len(sources) - 1, lead),
                       total, workdir,
                       settings, mesh=mesh, state_sharding=state_sh,
                       validate=early_stopping and early_stopping.bind(apply_fn))
  # train.select.keep="best": the best validation's model, not the last step's
  params, kept_step = (early_stopping.kept_params(run.state.params) if early_stopping
                       else (run.state.params, None))
  nnx.update(model, params)
  report = {"steps": run.steps, "budget_steps": total, "rows": n,
            "kept_step": kept_step if kept_step is not None else run.steps,
            # epochs of the full rows trained (not the budget; the drill lead is none)
            "epochs": round(max(0, run.steps - lead) * c.epochs / (total - lead), 2),
            "drill_lead_steps": lead,
            "batch": c.batch, "stopped_early": run.steps < total,
            "drill_rows": 0 if drill is None else int(drill["input_ids"].shape[0]),
            "train_tokens": run.train_tokens, "wall_s": run.wall_s, "cpu_s": run.cpu_s,
            "history": run.history, "resumed_from": run.resumed_from,
            "params": int(sum(np.size(x) for x in jax.tree.leaves(run.state.params)))}
  return model, model.config, report
