"""The ConPAct study pipeline: data -> tokenizer -> base roles -> online -> R/S training -> report.

Run by experiments/conpact/study.py (one study) and experiments/conpact/arms.py (one study per
arm and pipeline seed, configs/conpact/study.py with `arms=True`).

Stages (lib/run/stages.py: each saved in <workdir>/stages.json with its result and skipped on rerun;
a model stage also resumes from its checkpoints):
  data       planner / actor / baseline rows from expert play on SOURCE instances
             (agents/conpact/learned/rows.py), data/<set>.jsonl
  tokenizer  a byte-level BPE trained on the planner and actor rows
             (agents/conpact/learned/tokenizer.py; skipped with model.checkpoint, which brings
             its own)
  base_planner, base_actor  separate models (separate seeds, separately noised rows) through the
             one SFT loop (agents/conpact/learned/train.py), base/<role>/export
  online     every online condition on the EVALUATION split (agents/conpact/evaluate.py; planner
             model = `backend`, actor model = `actor_backend`), online/
  source     ConPAct-I rollouts of the base models on SOURCE instances (curated), source/
  train/<m>  each recipe (agents/conpact/learned/recipe_train.py: ConPAct-S, ConPAct-R, No Sup.,
             No Replay; the baseline last, token-matched to ConPAct-R), train/<m>/
  eval/<m>   each trained pair on the evaluation split (config.trained_conditions), eval/<m>/
  report     summary.json / summary.md: stage times, data stats, the online tables (Tables 18/19
             layout, paired differences vs Plan-Act and Assertion) and, per env and condition,
             Tables 20-22 analogues (agents/conpact/study_tables.py); study.png
"""
import copy
import json
import os

from agents.conpact import evaluate, study_tables
from agents.conpact.learned import recipe_train, report, rows as study_rows, train as role_train
from agents.conpact.learned.tokenizer import train_conpact_tokenizer
from lib.models import tokenizer as tokenizer_lib
from lib.run.jsonl import read_jsonl, write_jsonl
from lib.run.stages import Stages

ROLES = ("planner", "actor")


def _data(config, workdir) -> dict:
  d = config.data
  if d.discussion not in ("redraw", "recheck"):
    raise ValueError(f"data.discussion must be 'redraw' or 'recheck', got {d.discussion!r}")
  envs = ["sokoban"] + list(config.minigrid_tasks)
  sets = study_rows.build(envs, d.sokoban, d.babyai, {"planner": d.noise, "actor": d.noise},
                          {"planner": d.planner_seed, "actor": d.actor_seed},
                          discuss=d.discuss, react=d.react,
                          recheck=None if d.discussion == "redraw" else d.recheck)
  out = {}
  for name, rows in sets.items():
    path = os.path.join(workdir, "data", f"{name}.jsonl")
    write_jsonl(path, rows)
    out[name] = {"path": path, **study_rows.stats(rows)}
  return out


def _tokenizer(config, workdir, data) -> str | None:
  if config.model.checkpoint:
    return None
  rows = [r for role in ROLES for r in read_jsonl(data[role]["path"])]
  path = os.path.join(workdir, "tokenizer")
  train_conpact_tokenizer(study_rows.corpus(rows), config.model.vocab_size, path)
  return path


def _base(config, workdir, data, tok_dir, role) -> dict:
  tok = tokenizer_lib.load_tokenizer(tok_dir) if tok_dir else None
  rows = read_jsonl(data[role]["path"])
  train_cfg = copy.deepcopy(config.base.train)
  train_cfg.epochs = float(config.base.epochs[role])   # 0: base.train.steps
  return role_train.train_role(rows, tok, config.model, train_cfg,
                               os.path.join(workdir, "base", role),
                               seed=config.base[f"{role}_seed"], tag=f"base_{role}",
                               start_fresh=config.start_fresh)


def _eval_config(config, exports: dict, **changes):
  c = copy.deepcopy(config.online)
  c.backend.model.checkpoint = exports["planner"]
  c.actor_backend.model.checkpoint = exports["actor"]
  for k, v in changes.items():
    setattr(c, k, v)
  return c


def _evaluate(c, workdir) -> dict:
  evaluate.evaluate(c, workdir)
  return {"workdir": workdir}


def _source(config, workdir, exports) -> dict:
  s = config.source
  conds = [x for x in config.online.conditions if x["name"] in s.conditions]
  c = _eval_config(config, exports, split="source", instances=s.sokoban,
                   minigrid_per_task=s.mg_per_task, rollouts=s.rollouts, conditions=conds)
  return _evaluate(c, os.path.join(workdir, "source"))


def _train(config, workdir, name, recipe, curate, exports, data, source_dir, match) -> dict:
  t = copy.deepcopy(config.train)
  t.recipe = recipe
  t.source = source_dir
  t.roles = dict(exports)
  t.curate.update(dict(curate))
  t.baseline.rows = data["baseline"]["path"]
  t.baseline.match = match or ""
  t.start_fresh = config.start_fresh
  out = os.path.join(workdir, "train", name)
  recipe_train.train_recipe(t, out)
  return {"workdir": out, **{r: os.path.join(out, r, "export") for r in ROLES}}


def _results(workdir) -> list[dict]:
  with open(os.path.join(workdir, "results.jsonl"), encoding="utf-8") as f:
    return [json.loads(line) for line in f if line.strip()]


def run(config, workdir):
  stages = Stages(workdir)
  data = stages.run("data", lambda: _data(config, workdir))
  tok_dir = stages.run("tokenizer", lambda: _tokenizer(config, workdir, data))
  base = {r: stages.run(f"base_{r}", lambda r=r: _base(config, workdir, data, tok_dir, r))
          for r in ROLES}
  exports = {r: base[r]["export"] for r in ROLES}
  online_dir = os.path.join(workdir, "online")
  stages.run("online", lambda: _evaluate(_eval_config(config, exports), online_dir))
  # source rollouts feed ConPAct-S/R curation only (the two-arm study trains no recipe)
  source_dir = (stages.run("source", lambda: _source(config, workdir, exports))["workdir"]
                if config.recipes else None)
  trained, match = {}, None
  for rec in config.recipes:   # the baseline comes last: it is matched to ConPAct-R's tokens
    name = rec["name"]
    if rec["recipe"] == "baseline":
      match = trained.get("conpact_r", {}).get("workdir")
    trained[name] = stages.run(
        f"train/{name}", lambda rec=rec, match=match: _train(
            config, workdir, rec["name"], rec["recipe"], rec["curate"], exports, data, source_dir,
            match))
  evals = {}
  for name, t in trained.items():
    c = _eval_config(config, {r: t[r] for r in ROLES},
                     conditions=[x for x in config.online.conditions
                                 if x["name"] in config.trained_conditions])
    out = os.path.join(workdir, "eval", name)
    evals[name] = stages.run(f"eval/{name}", lambda c=c, out=out: _evaluate(c, out))
  tables = _study_tables(config, {n: e["workdir"] for n, e in evals.items()}, trained)
  return report.write(config, workdir, stages, data, base, online_dir, tables)


def _study_tables(config, eval_dirs: dict, trained: dict) -> list[dict]:
  """Per env and trained condition: study_tables' Tables 20-22 (base pair included as `base`)."""
  rows = {name: _results(d) for name, d in eval_dirs.items()}
  curate_of = {}
  for name, t in trained.items():
    with open(os.path.join(t["workdir"], "data_stats.json"), encoding="utf-8") as f:
      curate_of[name] = json.load(f).get("curate")
  out = []
  for env in config.envs:
    for cond in config.trained_conditions:
      by_model = {name: [r for r in rs if r["env"] == env and r["condition"] == cond]
                  for name, rs in rows.items()}
      tabs = study_tables.study_tables(by_model, k=config.online.rollouts, baseline="baseline",
                                       curate_of=curate_of,
                                       extra_pairs=[("conpact_r", "conpact_s")],
                                       n_resamples=config.online.n_resamples, seed=config.seed)
      out.append({"env": env, "condition": cond, **tabs})
  return out
