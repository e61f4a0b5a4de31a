"""gencoord/sender_fit: has a trained GenCoord model learned the sender's obtain quantity?

Loads one model another `gencoord/learned` run trained (`<run_dir>/models/<recipe>/s<seed>/hf`
and that recipe's tokenizer) and scores its sender rows teacher-forced (greedy exact match, EOS
included; `agents.gencoord.learned.validation.make_scorer`) in three sets, each from the full
prompt a policy reads and from the drill's own-section prompt (`drill.drill_pairs`):

- `validation`: the sender rows of the validation split (new instances);
- `train`: the sender rows the run trained on at full length (its `data/<recipe>.jsonl`);
- `drill`: every `drill_stride`-th of the drill rows it trained on (`data/<recipe>_drill.jsonl`).

A model that misses its own training rows has not learned the arithmetic (an optimisation or
capacity failure); one that fits them and misses new instances memorised; one right from drill
prompts and wrong from full ones did not carry the drill over (configs/gencoord/README.md).
"""
import json
import os

import numpy as np
from absl import logging

from agents.gencoord import data, suites
from agents.gencoord.learned import chat, drill, split_audit, training_recipes, validation
from lib.models.pretrained import load_pretrained
from lib.models.tokenizer import load_tokenizer
from lib.plan.launch_checks import LaunchError
from lib.run.results import write_summary
from lib.train.state import nnx_apply_fn


def _trained_keys(path: str) -> set:
  """(episode_id, stage, prompt_sha256) of every row of a run's training JSONL: the rows
  themselves, not only their prompts (a prompt can recur in rows the run did not keep)."""
  with open(path, encoding="utf-8") as f:
    return {(r["episode_id"], r["stage"], r["prompt_sha256"])
            for r in map(json.loads, filter(str.strip, f))}


def _sender(rows) -> list:
  return [r for r in rows if r.stage.startswith("sender")]


def run(config, workdir):
  run_dir, recipe_name, seed = config.run_dir, config.recipe, config.seed
  if config.split == "heldout":
    raise LaunchError("sender_fit: split 'heldout' is the evaluation pool; diagnose on the "
                      "validation split")
  model_dir = os.path.join(run_dir, "models", recipe_name, f"s{seed}", "hf")
  if not os.path.isdir(model_dir):
    raise LaunchError(f"sender_fit: no trained model at {model_dir} (run_dir, recipe and seed "
                      "name a model that a gencoord/learned run exported)")
  with open(os.path.join(run_dir, "config.json"), encoding="utf-8") as f:
    run_config = json.load(f)
  recipe = training_recipes.get(recipe_name)
  tok = load_tokenizer(os.path.join(run_dir, "models", recipe_name, "tokenizer"))
  model, _ = load_pretrained(model_dir)
  apply_fn, params = nnx_apply_fn(model)

  # The rows the run trained on, found by the ids and prompt hashes it wrote (so a `max_rows`
  # subsample or another `train_clusters_per_template` is read off the run, not assumed).
  trained = _trained_keys(os.path.join(run_dir, "data", f"{recipe_name}.jsonl"))
  train_rows = [r for r in _sender(recipe.rows(run_config["train_clusters_per_template"]))
                if (r.episode_id, r.stage, split_audit.row_sha256(r)) in trained]
  sets = {"validation": _sender(data.forward_rows(suites.suite(config.split), recipe.surface,
                                                  recipe.horizon)),
          "train": train_rows}
  drill_file = os.path.join(run_dir, "data", f"{recipe_name}_drill.jsonl")
  if os.path.exists(drill_file):
    drilled = _trained_keys(drill_file)
    n = run_config["train"]["drill"]["clusters_per_template"]
    sets["drill"] = [r for r in drill.drill_rows(n, recipe_name)
                     if (r.episode_id, r.stage, drill.drill_sha256(r)) in drilled
                     ][::config.drill_stride]
  if config.max_rows:
    sets = {k: v[:config.max_rows] for k, v in sets.items()}

  table = []
  for name, rows in sets.items():
    if not rows:
      raise LaunchError(f"sender_fit: no {name} sender rows of {recipe_name!r} in {run_dir}")
    row = {"set": name, "rows": len(rows)}
    for prompt, pairs in (("full", chat.sft_pairs(rows, recipe.surface)),
                          ("own_sections", drill.drill_pairs(rows))):
      vset = validation.encode(rows, pairs, tok)
      exact, first = validation.make_scorer(apply_fn, vset)(params)
      row[f"{prompt}_exact_%"] = 100 * float(np.mean(exact))
      if prompt == "full":
        fields = [validation.first_error_field(tok, vset.target_ids[i], int(first[i]))
                  for i in np.flatnonzero(~exact)]
        # the most frequent first wrong field; ties go to the name first in sort order
        row["full_first_wrong"] = min(sorted(set(fields)), key=lambda f: -fields.count(f),
                                      default=None)
    logging.info("sender_fit %s: full %.1f%%, own sections %.1f%% of %d", name,
                 row["full_exact_%"], row["own_sections_exact_%"], len(rows))
    table.append(row)
  meta = {"run_dir": run_dir, "recipe": recipe_name, "seed": seed, "split": config.split}
  write_summary(workdir, meta, table,
                title=f"GenCoord sender fit: {recipe_name} s{seed} of {run_dir}",
                notes="Teacher-forced greedy exact match of sender rows (every target token "
                      "and EOS), from the full prompt and from the drill's own-section prompt. "
                      "`train` / `drill`: rows the run trained on (matched by episode, stage "
                      "and prompt_sha256); "
                      f"`validation`: the `{config.split}` split's senders (new instances).",
                key=["set"], debug=config.debug)
  return table
