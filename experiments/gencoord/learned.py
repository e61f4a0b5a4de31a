"""GenCoord learned policies end to end: data -> tokenizer -> SFT -> closed-loop evaluation.

For every training recipe in `config.recipes` (agents/gencoord/learned/training_recipes.py) and
seed: write the validated supervision rows, train a byte-level BPE on the recipe's rows
(models/<recipe>/tokenizer, so a recipe's model does not depend on which other recipes share
the run, and runs can reuse each other's models: `config.reuse_models_from`,
agents/gencoord/learned/reuse.py), SFT a small Qwen3 (resumable; final-step checkpoint, exported
in Hugging Face format under models/<recipe>/s<seed>/hf), then run every evaluation condition closed
loop on `config.eval.suite` with batched greedy decoding through lib.generate.sampling. Token
counts in the results are taken under one counting BPE trained on all rows of the run
(tokenizer/), so they compare across surfaces; a run from a real checkpoint uses its tokenizer for
all of it. Rows go to results.jsonl keyed by (condition, seed, episode_id) so reruns skip
finished work.

Timing (first seed): TTC = wall time from the first model call of an episode to its last one
(parse, check and resolution follow in microseconds), measured warm at batch 1 on
`eval.timing_clusters` clusters; episode time adds execution and verification in the simulated
world. Batched throughput = episodes/s when all episodes of the pool are decoded together.
A condition may name a task-structure `view` (its pool is the suite under that view: the same
checkpoints, trained once on the Full-view train suite, are evaluated under every view) or a
model-free policy (`backend`, agents/gencoord/policies/registry.py) instead of a recipe (the
visibility study's factorized rule). Tables and figures: agents/gencoord/learned/report.py.
"""
import json
import os
import time

import numpy as np
from absl import logging

from agents.gencoord import data, metrics, protocol, suites
from agents.gencoord.learned import chat, drill, report, reuse, sft_rows
from agents.gencoord.learned import tokenizer as dsl_tokenizer
from agents.gencoord.learned import train
from agents.gencoord.learned import policy as learned_policy
from agents.gencoord.learned import split_audit, training_recipes, validation
from agents.gencoord.policies import registry as policies
from lib import models as lib_models
from lib.models import model_setup
from lib.models.tokenizer import load_tokenizer
from lib.run import tb
from lib.run.jsonl import write_jsonl
from lib.run.results import ResultsLog
from lib.sft import batches as sft_batches, chat_rows


def _episodes(config, view=None):
  """The evaluation pool (under a task-structure `view` when the condition names one).

  eval.max_clusters keeps the first clusters in sorted order, or with eval.spread_clusters
  the first clusters of every template in turn (a debug pool still covers every motif, and
  binding pairs, adjacent in sorted order, stay together)."""
  eps = suites.suite(config.eval.suite, **({"view": view} if view else {}))
  n = config.eval.max_clusters
  if n:
    ids = sorted(suites.clusters(eps))
    if config.eval.spread_clusters:
      per: dict = {}
      for ep in eps:
        per.setdefault(ep.template, [])
        if ep.cluster_id not in per[ep.template]:
          per[ep.template].append(ep.cluster_id)
      queues = [sorted(v) for _, v in sorted(per.items())]
      ids = [q[k] for k in range(max(map(len, queues))) for q in queues if k < len(q)]
    keep = set(ids[:n])
    eps = [ep for ep in eps if ep.cluster_id in keep]
  return eps


def _subsample(rows, max_rows, seed: int = 0):
  """A fixed-seed random sample of each stage's rows, stages in proportion (debug runs).

  Every k-th row aliases with the regular row order (per episode a stage cycle, per cluster
  binding and role view): k = 4 kept only sender rows of one binding and one role view."""
  if not max_rows or max_rows >= len(rows):
    return rows
  step = len(rows) / max_rows
  by_stage: dict = {}
  for r in rows:
    by_stage.setdefault(r.stage, []).append(r)
  rng = np.random.default_rng(seed)
  out = []
  for stage_rows in by_stage.values():
    n = max(1, round(len(stage_rows) / step))
    out += [stage_rows[i] for i in sorted(rng.choice(len(stage_rows), n, replace=False))]
  return out


def _batching(config, rows):
  """(rows, groups) for `train.batching`: "rows" (default) -> (rows, None), each epoch a
  permutation of rows; "contrast" -> only rows in a full group, and their contrast groups
  (`sft_rows.contrast_groups`: every batch holds each of its worlds with every binding and
  role view)."""
  mode = config.train.batching
  if mode == "rows":
    return rows, None
  if mode != "contrast":
    raise ValueError(f"train.batching={mode!r}; valid: 'rows', 'contrast'")
  groups = sft_rows.contrast_groups(rows)
  keep = [i for i, g in enumerate(groups) if g >= 0]
  if not keep:
    raise ValueError("train.batching='contrast': no row has a partner with another binding")
  if len(keep) < len(rows):
    logging.info("train.batching=contrast: %d of %d rows have no partner, left out",
                 len(rows) - len(keep), len(rows))
  return [rows[i] for i in keep], [groups[i] for i in keep]


def _tokenizer(config, path, rows_by_recipe):
  """The BPE of these recipes' rows, trained into `path` (or loaded from it), or a real
  checkpoint's own tokenizer."""
  own = model_setup.model_tokenizer(config.model.checkpoint)
  if own is not None:   # a real checkpoint (Qwen2/3/3.5 HF dir) brings its own vocabulary
    return own
  if os.path.exists(os.path.join(path, "tokenizer.json")):
    return load_tokenizer(path)
  texts = []
  for name, rows in rows_by_recipe.items():
    texts += chat.tokenizer_texts(rows, training_recipes.get(name).surface)
  return dsl_tokenizer.train_dsl_tokenizer(texts, config.model.vocab_size, path,
                                           config.number_tokens)


def _early_stopping(config, recipe_name, tok, mdir, per_epoch: int, sources: int = 1,
                    lead: int = 0):
  """The validation rule of `config.train.select` (None when the config sets none).

  select: split (a forward split other than heldout), every_epochs, min_epochs (either may be
  a fraction of an epoch of the full rows, `per_epoch` batches; with `sources` interleaved batch
  sources an epoch takes that many times its steps), stop_at (cluster exact match in [0, 1]
  that ends training), keep ("last": the final step's model; "best": the best validation's,
  its params under <mdir>/best). Epochs count from the end of a drill lead of `lead` steps."""
  sel = config.train.select
  if not sel:
    return None
  spe = per_epoch * sources
  vset = validation.build(recipe_name, tok, sel["split"])
  os.makedirs(mdir, exist_ok=True)
  log_every = config.train.log_every        # validation runs on a log step
  every = max(1, round(spe * sel["every_epochs"] / log_every)) * log_every
  return validation.EarlyStopping(vset, tok, every=every,
                                  min_steps=lead + round(spe * sel["min_epochs"]),
                                  stop_at=sel["stop_at"],
                                  path=os.path.join(mdir, "validation.jsonl"),
                                  keep=sel.get("keep", "last"),
                                  best_dir=os.path.join(mdir, "best"))


def _drill(config, recipe_name, tok, workdir):
  """Left-padded short-context drill arrays (agents/gencoord/learned/drill.py), or None when
  `train.drill.clusters_per_template` is 0; its rows go to data/<recipe>_drill.jsonl."""
  n = config.train.drill.clusters_per_template
  if not n:
    return None
  rows = drill.drill_rows(n, recipe_name)
  write_jsonl(os.path.join(workdir, "data", f"{recipe_name}_drill.jsonl"),
              [drill.drill_record(r) for r in rows], sort_keys=True)
  return sft_batches.left_padded(chat_rows.encode_rows(tok, drill.drill_pairs(rows)),
                                 tok.pad_token_id or 0)


def _run_condition(spec, recipe, eps, policy, seed, horizon, tokens):
  """Result rows of one condition; `tokens` maps episode_id -> [input, output] tokens."""
  runner = protocol.run_forward if recipe.protocol == "forward" else protocol.run_feedback
  extra = {"horizon": horizon} if recipe.protocol == "forward" else {}
  recs = runner(eps, policy, spec.condition, **extra)
  rows = []
  for rec in recs:
    row = json.loads(json.dumps(metrics.episode_row(rec), default=list))
    tok = tokens.get(rec.ep.episode_id, [0, 0])
    row.update(condition=spec.name, seed=seed, input_tokens=tok[0], output_tokens=tok[1],
               view=rec.ep.view,
               prompt_sha256=getattr(policy, "prompt_hashes", {}).get(rec.ep.episode_id, []))
    rows.append(row)
  return rows


def _timing(spec, recipe, eps, policy, horizon, n_clusters):
  """Warm batch-1 TTC and episode time on the first n_clusters clusters."""
  keep = sorted(suites.clusters(eps))[:n_clusters]
  sample = [ep for ep in eps if ep.cluster_id in set(keep)]
  runner = protocol.run_forward if recipe.protocol == "forward" else protocol.run_feedback
  extra = {"horizon": horizon} if recipe.protocol == "forward" else {}
  runner(sample[:1], policy, spec.condition, **extra)           # compile batch-1 programs
  ttc, episode = [], []
  for ep in sample:
    policy.call_times.clear()
    t0 = time.perf_counter()
    runner([ep], policy, spec.condition, **extra)
    episode.append(time.perf_counter() - t0)
    if policy.call_times:
      ttc.append(policy.call_times[-1][1] - policy.call_times[0][0])
  return {"ttc": ttc, "episode": episode}


def run(config, workdir):
  t_start, c_start = time.perf_counter(), time.process_time()
  writer = tb.writer(workdir)
  names = list(config.recipes)
  per_template = config.train_clusters_per_template
  rows_by_recipe = {n: _subsample(training_recipes.get(n).rows(per_template), config.max_rows)
                    for n in names}
  for n, rows in rows_by_recipe.items():
    bad = [r.episode_id for r in rows if not data.validate(r)]
    if bad:
      raise ValueError(f"recipe {n}: {len(bad)} rows fail validation, e.g. {bad[:3]}")
    write_jsonl(os.path.join(workdir, "data", f"{n}.jsonl"),
                [split_audit.row_record(r) for r in rows],
                sort_keys=True)
  counter = _tokenizer(config, os.path.join(workdir, "tokenizer"), rows_by_recipe)
  toks = {n: _tokenizer(config, os.path.join(workdir, "models", n, "tokenizer"),
                        {n: rows_by_recipe[n]}) for n in names}
  t_data = time.perf_counter() - t_start
  vocab = ", ".join(f"{n} {len(t)}" for n, t in toks.items())
  logging.info("gencoord_learned: data + tokenizers (%s tokens) in %.1fs", vocab, t_data)
  resolved = json.loads(config.to_json_best_effort())
  # One recipe (or a real checkpoint's vocabulary): the counting BPE is the model's own, and the
  # counts are the model's.
  count_with = counter if len(names) > 1 and not config.model.checkpoint else None

  eps = _episodes(config)
  specs = [dict(s) for s in config.eval.conditions]
  pools = {s.get("view"): _episodes(config, s.get("view")) for s in specs}
  log = ResultsLog(workdir, key=("condition", "seed", "episode_id"))
  train_reports, timing, throughput = {}, {}, {}
  drills = {n: _drill(config, n, toks[n], workdir) for n in names}   # the same for every seed
  for seed in config.seeds:
    models_ = {}
    for n in names:
      recipe = training_recipes.get(n)
      mdir = os.path.join(workdir, "models", n, f"s{seed}")
      rows, groups = _batching(config, rows_by_recipe[n])
      arrays = sft_batches.left_padded(
          chat_rows.encode_rows(toks[n], chat.sft_pairs(rows, recipe.surface)),
          toks[n].pad_token_id or 0)
      drill_arrays = drills[n]
      per_epoch = sft_batches.steps_per_epoch(len(rows), config.train.batch, groups)
      reused = reuse.adopt(resolved, workdir, config.reuse_models_from, n, seed,
                           log=logging.info)
      stopping = _early_stopping(config, n, toks[n], mdir, per_epoch,
                                 sources=1 if drill_arrays is None else 2,
                                 lead=train.drill_lead_steps(drill_arrays, config.train))
      model, mcfg, rep = train.train_sft(arrays, toks[n], config, mdir, seed,
                                         tag=f"sft/{n}/s{seed}",
                                         early_stopping=stopping, groups=groups,
                                         drill=drill_arrays)
      if stopping:
        rep["validation"] = validation.history(stopping.path)
      rep.update(reused_from=reused, seq_len=int(arrays["input_ids"].shape[1]),
                 mean_prompt_tokens=float(arrays["prompt_len"].mean()),
                 mean_target_tokens=float(arrays["target_len"].mean()))
      train_reports[f"{n}/s{seed}"] = rep
      if config.export_hf:
        lib_models.save_pretrained(model, mcfg, os.path.join(mdir, "hf"), tokenizer=toks[n])
      models_[n] = model
    for spec_d in specs:
      spec = _Spec(**spec_d)
      pool = pools[spec.view]
      todo = [ep for ep in pool if not log.has({"condition": spec.name, "seed": seed,
                                                 "episode_id": ep.episode_id})]
      if spec.backend:              # a model-free policy (the visibility study's rule)
        recipe, tokens = _MODEL_FREE, {}            # rules count no tokens
        policy = policies.make(spec.backend)
      else:
        recipe = training_recipes.get(spec.recipe)
        llm = learned_policy.flax_llm(models_[spec.recipe], toks[spec.recipe],
                                      config.eval.max_batch)
        # constrained: commitments decoded under the surface's regex, masked in the sampler
        policy = learned_policy.LearnedPolicy(llm, recipe.surface, name=spec.recipe,
                                              constrained=spec.constrained,
                                              count_tokenizer=count_with)
        tokens = policy.tokens
      if todo:
        t0 = time.perf_counter()
        for row in _run_condition(spec, recipe, todo, policy, seed, spec.horizon, tokens):
          log.append(row)
        logging.info("condition %s seed %d: %d episodes in %.1fs (incl. compile)", spec.name,
                     seed, len(todo), time.perf_counter() - t0)
      if seed == config.seeds[0] and config.eval.timing_clusters and not spec.backend:
        if config.eval.throughput:
          tokens.clear()
          t0 = time.perf_counter()
          _run_condition(spec, recipe, pool, policy, seed, spec.horizon, tokens)
          throughput[spec.name] = len(pool) / (time.perf_counter() - t0)
        timing[spec.name] = _timing(spec, recipe, pool, policy, spec.horizon,
                                    config.eval.timing_clusters)
  rows = log.rows()
  log.close()
  wall, cpu = time.perf_counter() - t_start, time.process_time() - c_start
  return report.write(config, workdir, rows, specs, eps, train_reports, timing, throughput,
                      {"wall_s": wall, "cpu_s": cpu, "data_tokenizer_s": t_data,
                       "vocab": vocab, "count_vocab": len(counter)}, writer)


class _Spec:
  """One evaluation condition: a trained recipe (or a model-free policy, `backend`), the request
  condition, the horizon, the task-structure `view` of its pool (None: the suite's own) and
  whether the recipe's commitments are decoded under its grammar (`constrained`)."""

  def __init__(self, name, recipe=None, condition="true", horizon="multi", view=None,
               backend=None, constrained=False):
    if (recipe is None) == (backend is None):
      raise ValueError(f"condition {name!r} needs exactly one of recipe / backend")
    if constrained and backend is not None:
      raise ValueError(f"condition {name!r}: constrained decoding needs a trained recipe")
    self.name, self.recipe, self.condition, self.horizon = name, recipe, condition, horizon
    self.view, self.backend, self.constrained = view, backend, bool(constrained)


# The protocol of model-free conditions.
_MODEL_FREE = training_recipes.TrainingRecipe("model_free", "dsl", "forward")
