"""ConPAct-S / ConPAct-R training, and the token-matched continued-SFT baseline (paper Tables 7, 8).

Recipes (`config.recipe`):
  conpact_s, conpact_r  curate the SOURCE-split logs of `config.conditions` in `config.source` (a
                        conpact/eval workdir) with `agents.conpact.curate` under the recipe's
                        target rule (`agents.conpact.recipes`) and the Table 20 switches
                        `config.curate` (consistency filtering, reconciliation supervision,
                        reconciliation replay, success_only)
  baseline              plain Plan-Act demonstrations `config.baseline.rows` (jsonl of
                        {"messages", "target", "meta": {"role"}}), no curation
Separate planner and actor: each role's model (`config.roles[role]`, an HF dir; "" = the embedded
tiny random model of `config.model`) trains on its own role's targets only, through the one SFT
loop (`lib.sft.loop`, resumable from <workdir>/<role>/ckpt), and is exported with its tokenizer to
<workdir>/<role>/export (loadable by lib/backends/flax_backend.py via `model.checkpoint`); the
examples it trained on go to <workdir>/<role>/rows.jsonl. Batches group the examples by length
(padded to a power of two, `training_batches`), each example once, in a seeded order.

Token budgets, in TARGET tokens per role (reply + EOS; `curate.target_tokens`), paper Table 7
("3 epochs of ReAct SFT; token-matched across methods"):
  baseline with `baseline.match` (another conpact/train workdir): that run's trained target tokens
      of the role, read from its data_stats.json -- the baseline is matched to the recipe;
  otherwise, with reference rows (`baseline.rows`): `reference_epochs` x the rows' target tokens
      of the role (the three-epoch reference; a recipe's curated examples are cycled to it);
  otherwise: `reference_epochs` passes over the run's own examples.
Examples are taken in shuffled passes until the next would exceed the budget (`match_budget`), so
a matched run ends within one example of it; `train.max_steps` > 0 caps the steps of an unmatched
run (the cut is recorded as `budget_met: false`) -- a matched baseline ignores it, since its budget
is the matched run's trained tokens (a capped recipe's, too). data_stats.json holds, per role:
curated rows, trained rows and target tokens, the budget and its rule, rows by source and
candidate replies excluded by reason.
"""
import json
import math
import os

import numpy as np
from absl import logging
from flax import nnx

from agents.conpact import curate, recipes, schemas, textenv
from lib import models
from lib.models import model_setup
from lib.models import tokenizer as tokenizer_lib
from lib.parallel import sharding
from lib.run.jsonl import read_jsonl, write_jsonl
from lib.run.results import markdown_table, write_summary
from lib.sft import loop as sft_loop
from lib.train import optim, setup as train_loop
from lib.train.state import nnx_apply_fn

ROLES = ("planner", "actor")
RECIPES = ("conpact_s", "conpact_r", "baseline")  # also checked by configs/conpact/train.py
DATA_STATS = "data_stats.json"
ROWS = "rows.jsonl"  # per role: the trained examples (selection order; batches group by length)


def read_stats(workdir: str) -> dict:
  """The data_stats.json of a conpact/train workdir (one clear line when it has none)."""
  path = os.path.join(workdir, DATA_STATS)
  if not os.path.isfile(path):
    raise FileNotFoundError(f"baseline.match: {workdir!r} has no {DATA_STATS} (not a finished "
                            "conpact/train run)")
  with open(path, encoding="utf-8") as f:
    return json.load(f)


def _curated(config) -> tuple[dict, dict]:
  """Recipe examples per role and the exclusion counts per role."""
  rows = read_jsonl(os.path.join(config.source, "results.jsonl"), "source results")
  rows = [r for r in rows if r["condition"] in config.conditions]
  envs = list(config.envs) or sorted({r["env"] for r in rows})
  cfg = curate.CurateConfig(recipe=config.recipe, **dict(config.curate))
  examples = {role: [] for role in ROLES}
  excluded = {role: {} for role in ROLES}
  for env in envs:
    got = curate.curation([r for r in rows if r["env"] == env], schemas.get(env),
                          textenv.task(env).action_names, cfg)
    for ex in got.examples:
      examples[ex["role"]].append(ex)
    for role, reasons in got.excluded.items():
      for k, n in reasons.items():
        excluded[role][k] = excluded[role].get(k, 0) + n
  return examples, excluded


def _demonstrations(path: str) -> dict:
  rows = read_jsonl(path, "baseline.rows") if path else []
  out = {role: [] for role in ROLES}
  for r in rows:
    role = r["meta"]["role"]
    if role not in out:
      raise ValueError(f"baseline.rows: meta.role {role!r} is not one of {ROLES}")
    out[role].append({"messages": r["messages"], "target": r["target"], "role": role,
                      "source": "demonstration"})
  return out


def _budget(config, role: str, own: list, reference: list, count, match: dict | None):
  """(target-token budget, the rule that set it); see the module doc."""
  if match is not None:
    return int(match["roles"][role]["target_tokens"]), f"matched to {config.baseline.match}"
  base = reference if reference else own
  what = "reference demonstrations" if reference else "own examples"
  return curate.reference_budget(base, count, config.reference_epochs), \
      f"{config.reference_epochs} epochs of the {what}"


def training_batches(examples, tok, batch: int, max_len: int, seed: int):
  """(batch_at(step), steps): the examples tokenized once (`curate.tokenize`, each cut to its last
  `max_len` tokens as `curate.sft_batch` does), sorted by length and cut into batches of `batch`
  whose order a seeded permutation sets; a batch is right-padded to the power of two above its
  longest row (>= 64, <= max_len), so short rows do not pay for long ones and there are few
  compiled shapes. Every example is trained on exactly once; a short last batch is filled with
  loss-free copies of its first row."""
  enc = [tuple(v[-max_len:] for v in curate.tokenize(ex, tok)) for ex in examples]
  order = np.argsort([len(x) for x, _ in enc], kind="stable")
  chunks = [order[i:i + batch] for i in range(0, len(order), batch)]
  perm = np.random.default_rng(seed).permutation(len(chunks))

  def batch_at(step: int) -> dict:
    idx = list(chunks[perm[step]])
    longest = max(len(enc[i][0]) for i in idx)
    width = min(max_len, max(64, 1 << (longest - 1).bit_length()))
    out = {k: np.zeros((batch, width), np.int32) for k in ("input_ids", "attention_mask",
                                                            "loss_mask")}
    out["input_ids"][:] = tok.pad_token_id
    for r, i in enumerate(idx + [idx[0]] * (batch - len(idx))):
      x, m = enc[i]
      out["input_ids"][r, :len(x)], out["attention_mask"][r, :len(x)] = x, 1
      if r < len(idx):
        out["loss_mask"][r, :len(m)] = m
    return out
  return batch_at, len(chunks)


def role_tokenizer(config, role: str, role_dir: str):
  """The role's tokenizer: its checkpoint's own (`model_setup.model_tokenizer` decides; a role
  checkpoint must bring one, since the exported role is served with it), or the embedded BPE
  (`model_setup.TINY_CORPUS`, as `build_model` trains it) for a from-scratch role."""
  checkpoint = config.roles[role]
  if not checkpoint:
    return tokenizer_lib.train_tokenizer(list(model_setup.TINY_CORPUS),
                                         int(config.model.vocab_size),
                                         os.path.join(role_dir, "tiny_tokenizer"))
  model_setup.check_checkpoint(checkpoint)
  tok = model_setup.model_tokenizer(checkpoint)
  if tok is None:
    raise FileNotFoundError(f"roles.{role}: {checkpoint!r} has no tokenizer.json")
  return tok


def select(config, role: str, examples: list, reference: list, match: dict | None, tok
           ) -> tuple[list, dict]:
  """One role's (examples to train on, in selection order; their account for data_stats.json)."""
  c = config.train
  counts = {}  # id(example) -> target tokens (examples are counted again by every pass)

  def count(ex: dict) -> int:
    if id(ex) not in counts:
      counts[id(ex)] = curate.target_tokens(ex, tok, c.max_len)
    return counts[id(ex)]

  budget, rule = _budget(config, role, examples, reference, count, match)
  picked = curate.match_budget(examples, budget, count, seed=config.seed)
  steps = math.ceil(len(picked) / c.batch)
  if c.max_steps and match is None:  # a matched run's budget is the match, not the step cap
    steps = min(steps, c.max_steps)
  picked = picked[:steps * c.batch]
  used = sum(count(ex) for ex in picked)
  return picked, {
      "rows_available": len(examples), "rows": len(picked), "target_tokens": used,
      "budget": budget, "budget_rule": rule,
      "budget_met": bool(picked) and budget - used < max(map(count, examples)),
      "reference_rows": len(reference),
      "reference_target_tokens": sum(map(count, reference)) if reference else None,
      "by_source": {s: sum(ex["source"] == s for ex in picked)
                    for s in sorted({ex["source"] for ex in picked})},
      "steps": steps, "train_tokens": None, "loss_first": None, "loss_last": None}


def plan(config, workdir: str) -> dict:
  """Everything but the training: role -> {"tokenizer", "rows" (to train on),
  "stats"}; raises one line on a bad recipe, role table or input."""
  if config.recipe not in RECIPES:
    raise ValueError(f"recipe {config.recipe!r}; valid: {', '.join(RECIPES)}")
  if set(config.roles) != set(ROLES):
    raise ValueError(f"roles must name exactly {ROLES}, got {sorted(config.roles)}")
  reference = _demonstrations(config.baseline.rows)
  match = None
  if config.recipe == "baseline":
    if not config.baseline.rows:
      raise ValueError("recipe=baseline needs baseline.rows (plain demonstration rows)")
    examples, excluded = reference, {role: {} for role in ROLES}
    match = read_stats(config.baseline.match) if config.baseline.match else None
  else:
    examples, excluded = _curated(config)
  out = {}
  for role in ROLES:
    tok = role_tokenizer(config, role, os.path.join(workdir, role))
    rows, stats = select(config, role, examples[role], reference[role], match, tok)
    out[role] = {"tokenizer": tok, "rows": rows, "stats": {**stats, "excluded": excluded[role]}}
  return out


def _train_role(config, workdir: str, role: str, tok, picked: list, stats: dict) -> dict:
  c = config.train
  role_dir = os.path.join(workdir, role)
  block = {**dict(config.model), "checkpoint": config.roles[role]}
  model, _, _ = model_setup.build_model(block, seed=config.seed, tokenizer=tok)
  stats = {**stats, "export": os.path.join(role_dir, "export"),
           "rows_file": os.path.join(role_dir, ROWS)}
  write_jsonl(stats["rows_file"], picked)   # what was trained on
  steps = stats["steps"]
  if steps:
    apply_fn, params = nnx_apply_fn(model, compute_dtype=model_setup.compute_dtype(config.model))
    tx = optim.adamw(c.lr, steps, warmup_frac=0.05)
    batch_at, _ = training_batches(picked, tok, c.batch, c.max_len, config.seed)  # `steps` of them
    mesh = sharding.mesh_from_config(config)   # scale=paper: --config.mesh.fsdp=N shards the role
    state, state_sh = train_loop.create_state(params, tx, mesh)
    settings = sft_loop.SFTConfig(log_every=c.log_every, ckpt_every=c.ckpt_every,
                                  prefix=f"conpact_train/{role}/",
                                  start_fresh=train_loop.fresh_start(config),
                                  accum_steps=c.accum_steps)
    run_ = sft_loop.train(apply_fn, state, tx, batch_at, steps, role_dir, settings,
                          mesh=mesh, state_sharding=state_sh)
    nnx.update(model, run_.state.params)
    losses = [loss for _, loss in run_.history]
    stats.update(loss_first=losses[0], loss_last=losses[-1], train_tokens=run_.train_tokens)
  else:  # nothing to train on: the init model is exported unchanged, and data_stats says so
    logging.warning("conpact/train %s: no %s targets; exporting the initial model", config.recipe,
                    role)
  models.save_pretrained(model, model.config, stats["export"], tokenizer=tok)
  return stats


def train_recipe(config, workdir):
  """Trains the planner and actor of `config.recipe` (see the module doc) and exports them.

  Args:
    config: a conpact/train config (configs/conpact/train.py).
    workdir: the run directory (<role>/export, <role>/rows.jsonl, data_stats.json, summary).
  Returns:
    The data_stats dict: recipe, per-role stats (export path, rows, tokens, losses), curate.
  """
  planned = plan(config, workdir)
  roles = {role: _train_role(config, workdir, role, p["tokenizer"], p["rows"], p["stats"])
           for role, p in planned.items()}
  stats = {"recipe": config.recipe, "roles": roles,
           "curate": None if config.recipe == "baseline" else dict(config.curate)}
  with open(os.path.join(workdir, DATA_STATS), "w", encoding="utf-8") as f:
    json.dump(stats, f, indent=1)
  table = [{"role": r, **{k: v for k, v in s.items() if k not in ("excluded", "by_source")}}
           for r, s in roles.items()]
  path = write_summary(workdir, stats, table, title=f"ConPAct training: {config.recipe}",
                       notes="Loss on target replies only; budgets in target tokens per role "
                             "(data_stats.json has every count).")
  sources = sorted({k for s in roles.values() for k in s["by_source"]})
  reasons = [k for k in recipes.REASONS if any(k in s["excluded"] for s in roles.values())]
  counts = [{"role": r, **{f"trained: {k}": s["by_source"].get(k, 0) for k in sources},
             **{f"left out: {k}": s["excluded"].get(k, 0) for k in reasons}}
            for r, s in roles.items()]  # true counts: a reason no reply had is 0
  with open(path, "a", encoding="utf-8") as f:
    f.write("\n## Trained rows by source, candidate replies left out by reason\n\n")
    f.write(markdown_table(counts, key=["role"]))
  return stats
