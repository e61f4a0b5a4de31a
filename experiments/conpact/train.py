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
loop (`lib.sft_loop`, resumable from <workdir>/<role>/ckpt), and is exported with its tokenizer to
<workdir>/<role>/export (loadable by lib/llm/flax_backend via `model.checkpoint`); the examples
it trained on, in order, go to <workdir>/<role>/rows.jsonl.

Token budgets, in TARGET tokens per role (reply + EOS; `curate.target_tokens`), paper Table 7
("3 epochs of ReAct SFT; token-matched across methods"):
  baseline with `baseline.match` (another conpact/train workdir): that run's trained target tokens
      of the role, read from its data_stats.json -- the baseline is matched to the recipe;
  otherwise, with reference rows (`baseline.rows`): `reference_epochs` x the rows' target tokens
      of the role (the three-epoch reference; a recipe's curated examples are cycled to it);
  otherwise: `reference_epochs` passes over the run's own examples.
Examples are taken in shuffled passes until the next would exceed the budget (`match_budget`), so
a matched run ends within one example of it; `train.max_steps` > 0 caps the steps (the cut is
recorded as `budget_met: false`). data_stats.json holds, per role: curated rows, trained rows and
target tokens, the budget and its rule, rows by source and candidate replies excluded by reason.
"""
import json
import math
import os

from absl import logging
from flax import nnx

from agents.conpact import curate, recipes, schemas, textenv
from lib import model_setup, models, optim, sft_loop, train_loop
from lib import tokenizer as tokenizer_lib
from lib.results import write_summary
from lib.train_state import TrainState, nnx_apply_fn

ROLES = ("planner", "actor")
RECIPES = ("conpact_s", "conpact_r", "baseline")
DATA_STATS = "data_stats.json"
ROWS = "rows.jsonl"  # per role: the trained examples, in training order


def _read_jsonl(path: str, what: str) -> list[dict]:
  if not os.path.isfile(path):
    raise FileNotFoundError(f"{what}: {path!r} does not exist")
  with open(path, encoding="utf-8") as f:
    return [json.loads(line) for line in f if line.strip()]


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
  rows = _read_jsonl(os.path.join(config.source, "results.jsonl"), "source results")
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
  rows = _read_jsonl(path, "baseline.rows") if path else []
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


def _batches(examples, tok, batch: int, max_len: int):
  """batch_at(step): fixed-shape batch `step` of `examples` in order (one compiled step); the last
  is filled with loss-free copies of the first examples."""
  def batch_at(step: int) -> dict:
    chunk = examples[step * batch:(step + 1) * batch]
    b = curate.sft_batch(chunk + examples[:batch - len(chunk)], tok, max_len)
    b["loss_mask"][len(chunk):] = 0
    return b
  return batch_at


def _train_role(config, workdir: str, role: str, examples: list, reference: list,
                match: dict | None) -> dict:
  c = config.train
  role_dir = os.path.join(workdir, role)
  block = {**dict(config.model), "checkpoint": config.roles[role]}
  model, _, tok = model_setup.build_model(
      block, seed=config.seed, tokenizer_texts=model_setup.TINY_CORPUS,
      tokenizer_dir=os.path.join(role_dir, "tiny_tokenizer"))
  if tok is None:
    raise FileNotFoundError(f"roles.{role}: {config.roles[role]!r} has no tokenizer.json")
  counts = {}  # id(example) -> target tokens (examples are counted again by every pass)

  def count(ex: dict) -> int:
    if id(ex) not in counts:
      counts[id(ex)] = curate.target_tokens(ex, tok, c.max_len)
    return counts[id(ex)]

  budget, rule = _budget(config, role, examples, reference, count, match)
  picked = curate.match_budget(examples, budget, count, seed=config.seed)
  steps = math.ceil(len(picked) / c.batch)
  if c.max_steps:
    steps = min(steps, c.max_steps)
  picked = picked[:steps * c.batch]
  used = sum(count(ex) for ex in picked)
  stats = {"rows_available": len(examples), "rows": len(picked), "target_tokens": used,
           "budget": budget, "budget_rule": rule,
           "budget_met": bool(picked) and budget - used < max(map(count, examples)),
           "train_tokens": None,
           "reference_rows": len(reference),
           "reference_target_tokens": sum(map(count, reference)) if reference else None,
           "by_source": {s: sum(ex["source"] == s for ex in picked)
                         for s in sorted({ex["source"] for ex in picked})},
           "steps": steps, "loss_first": None, "loss_last": None,
           "export": os.path.join(role_dir, "export"), "rows_file": os.path.join(role_dir, ROWS)}
  os.makedirs(role_dir, exist_ok=True)
  with open(stats["rows_file"], "w", encoding="utf-8") as f:  # what was trained on, in order
    f.writelines(json.dumps(ex) + "\n" for ex in picked)
  if steps:
    apply_fn, params = nnx_apply_fn(model, compute_dtype=model_setup.compute_dtype(config.model))
    tx = optim.adamw(c.lr, steps, warmup_frac=0.05)
    run_ = sft_loop.train(apply_fn, TrainState.create(params, tx), tx,
                          _batches(picked, tok, c.batch, c.max_len), steps, role_dir,
                          log_every=c.log_every, ckpt_every=c.ckpt_every,
                          prefix=f"conpact_train/{role}/",
                          start_fresh=train_loop.fresh_start(config))
    nnx.update(model, run_.state.params)
    losses = [loss for _, loss in run_.history]
    stats.update(loss_first=losses[0], loss_last=losses[-1], train_tokens=run_.train_tokens)
  else:  # nothing to train on: the init model is exported unchanged, and data_stats says so
    logging.warning("conpact/train %s: no %s targets; exporting the initial model", config.recipe,
                    role)
  tokenizer_lib.save_tokenizer(tok, stats["export"])
  models.save_pretrained(model, model.config, stats["export"])
  return stats


def run(config, workdir):
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
    recipes.get(config.recipe)
    examples, excluded = _curated(config)
  roles = {}
  for role in ROLES:
    roles[role] = _train_role(config, workdir, role, examples[role], reference[role], match)
    roles[role]["excluded"] = excluded[role]
  stats = {"recipe": config.recipe, "roles": roles,
           "curate": None if config.recipe == "baseline" else dict(config.curate)}
  with open(os.path.join(workdir, DATA_STATS), "w", encoding="utf-8") as f:
    json.dump(stats, f, indent=1)
  table = [{"role": r, **{k: v for k, v in s.items() if k not in ("excluded", "by_source")}}
           for r, s in roles.items()]
  write_summary(workdir, stats, table, title=f"ConPAct training: {config.recipe}",
                notes="Loss on target replies only; budgets in target tokens per role "
                      "(data_stats.json: rows by source, replies excluded by reason).")
  return stats
