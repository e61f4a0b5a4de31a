"""gencoord/drill_probe: the quickstart's sender drill alone, as a cheap proxy for its recipe.

The quickstart learns the sender's obtain quantity (`k × p − held`) at an epoch that moves with
the seed, and not at all for some seeds (configs/gencoord/README.md, "Quickstart robustness").
This experiment trains the quickstart's model, tokenizer and optimizer on the drill rows only
(`agents/gencoord/learned/drill.py`: sender rows of the training worlds, own-section prompts,
~110 tokens) and scores, every `validate_every_epochs`, teacher-forced greedy exact match of the
validation split's sender rows from the same own-section prompts (new instances; never the
held-out clusters), and at the end a strided sample of the drill rows it trained on. A run is
minutes of one core, so a recipe change (learning rate, warm-up, weight decay, depth, batch) can
be tried on every seed before it is paid for at full length.

Each validation is appended to <workdir>/validation.jsonl (as the quickstart's); summary.json's
row has the trajectory, the first step at which `reach` of the validation senders are exact (null
when never), and the final rates.
"""
import os

import numpy as np
from absl import logging

from agents.gencoord import data, suites
from agents.gencoord.learned import chat, drill, training_recipes, train, validation
from agents.gencoord.learned import tokenizer as dsl_tokenizer
from lib.run.results import write_summary
from lib.sft import batches as sft_batches, chat_rows
from lib.train.state import nnx_apply_fn


def _senders(rows) -> list:
  return [r for r in rows if r.stage.startswith("sender")]


def run(config, workdir):
  recipe = training_recipes.get(config.recipe)
  tok = dsl_tokenizer.train_dsl_tokenizer(
      chat.tokenizer_texts(recipe.rows(config.train_clusters_per_template), recipe.surface),
      config.model.vocab_size, os.path.join(workdir, "tokenizer"), config.number_tokens)
  rows = drill.drill_rows(config.drill_clusters_per_template, config.recipe)
  arrays = sft_batches.left_padded(chat_rows.encode_rows(tok, drill.drill_pairs(rows)),
                                   tok.pad_token_id or 0)
  val_rows = _senders(data.forward_rows(suites.suite(config.split), recipe.surface,
                                        recipe.horizon))
  if config.max_val_rows:
    val_rows = val_rows[:config.max_val_rows]
  vset = validation.encode(val_rows, drill.drill_pairs(val_rows), tok)
  per_epoch = sft_batches.steps_per_epoch(len(rows), config.train.batch)
  log_every = config.train.log_every
  every = max(1, round(per_epoch * config.validate_every_epochs / log_every)) * log_every
  path = os.path.join(workdir, "validation.jsonl")
  if os.path.exists(path):                 # a rerun in the same workdir starts a new trajectory
    os.remove(path)
  # stop_at above 1: the rule never fires, every validation is only recorded
  stopping = validation.EarlyStopping(vset, tok, every=every, min_steps=0, stop_at=2.0,
                                      path=path)
  model, _, rep = train.train_sft(arrays, tok, config, os.path.join(workdir, "model"),
                                  config.seed, tag="drill_probe", early_stopping=stopping)
  trajectory = [(h["step"], round(100 * h["row_exact"], 1))
                for h in validation.history(path)]
  apply_fn, params = nnx_apply_fn(model)
  drilled = rows[::config.drill_stride]
  dset = validation.encode(drilled, drill.drill_pairs(drilled), tok)
  drill_exact, _ = validation.make_scorer(apply_fn, dset)(params)
  final_val, _ = validation.make_scorer(apply_fn, vset)(params)
  reached = next((s for s, pct in trajectory if pct >= 100 * config.reach), None)
  row = {"seed": config.seed, "steps": rep["steps"], "rows_seen": rep["steps"] * config.train.batch,
         "drill_rows": len(rows), "validation_rows": len(val_rows),
         f"first_step_at_{round(100 * config.reach)}%": reached,
         "validation_exact_%": round(100 * float(np.mean(final_val)), 1),
         "drill_exact_%": round(100 * float(np.mean(drill_exact)), 1),
         # "step: %" pairs, one string, so summary.md's table stays one line a row
         "trajectory": ", ".join(f"{s}: {pct}" for s, pct in trajectory),
         "train_wall_s": round(rep["wall_s"], 1)}
  logging.info("drill_probe seed %d: validation senders %.1f%%, own drill rows %.1f%%, "
               "%s%% reached at %s", config.seed, row["validation_exact_%"],
               row["drill_exact_%"], round(100 * config.reach), reached)
  meta = {"recipe": config.recipe, "split": config.split, "seed": config.seed,
          "train": config.train.to_dict(), "model": config.model.overrides.to_dict()}
  write_summary(workdir, meta, [row], title="GenCoord drill probe: the sender drill alone",
                notes="Teacher-forced greedy exact match (every target token and EOS) of the "
                      f"`{config.split}` split's sender rows and of every "
                      f"{config.drill_stride}th drill row trained on, all from own-section "
                      "prompts. trajectory: step: validation sender rows exact (%).",
                key=["seed"], debug=config.debug)
  return [row]
