"""World-model audit study at CPU scale (labelled so throughout): every condition x seeds on
unseen TextWorld games, from one command (configs/wm/study.py).

Stages (lib/run/stages.py; each runs again in every session and resumes from its own outputs --
a later session may add the unseen games or conditions; wall and CPU seconds per stage in
stages.json and the summary):
  data        agents/wm/offline_data.py on TextWorld only: training games at every setting of the
              training mix, unseen evaluation games at the chosen setting (games cached on disk,
              keyed by settings + seed, generated in parallel processes); shared by every seed
  sft         the warm start (base/base_hf): BASE, the one starting model of every condition and
              seed (the audit's seeds vary post-training and sampling, not the base model)
  validation  BASE and a random-admissible-action reference on SOURCE-side validation games at
              every knob setting (the knob table; the regime is chosen from it, never from the
              unseen games). `validate_only` stops here (the unseen games are not even built)
  train/s<i>  agents/wm/train.py for every trained condition from BASE, with the same
              prompts, data order (seed i) and budget
  eval/s<i>   agents/wm/evaluate.py: every condition on the unseen games (list regime),
              prediction accuracy by the rule-based judge on held-out transitions
  report      pooled pass@1..k curves over seeds with task-bootstrap bands (agents/wm/passk.py),
              per-condition mean +- sd over seeds, and agents/wm/study_report.py (paired tests vs
              BASE and GT vs each control, knowledge/coverage gains, termination, traces, overlap)
"""
import copy
import json
import os

import numpy as np

from agents.wm import evaluate, offline_data, passk, train
from agents.wm.pipeline import warm_start
from agents.wm.study_report import study_report
from lib.hostloop.loop import final_rows
from lib.run.config_blocks import backend_config
from lib.run.results import markdown_table, write_summary
from lib.run.stages import Stages

EVAL_KEY = ("condition", "env", "regime", "level", "sample", "attempt")
_SEED_METRICS = ("pass@1", "AF", "LR_step", "repeat", "turns", "pred_acc")


def _train(config, sd: str, bd: str, base_hf: str, seed: int) -> dict:
  out = {}
  for name in config.conditions:
    if name == "BASE":
      continue
    wd = os.path.join(sd, "train", name)
    done = os.path.join(wd, "summary.json")
    if os.path.exists(done) and os.path.exists(os.path.join(wd, "hf", "config.json")):
      out[name] = json.load(open(done))["summary"]       # finished in an earlier session
      continue
    c = copy.deepcopy(config.train_template)
    c.seed = seed
    c.condition = name
    c.grpo.permute_scores = name.endswith("PERM")
    c.data.train = os.path.join(bd, "train_short.jsonl")
    c.model.checkpoint = base_hf
    out[name] = train.train_condition(c, wd)
  return out


def _eval_config(config, hf_dirs: dict, seed: int, games_dir: str):
  c = copy.deepcopy(config.eval)
  c.seed = seed
  c.conditions = {name: (backend_config("flax", model=dict(checkpoint=path),
                                        max_batch=c.max_live, seed=1000 * seed + i)
                         if path else dict(kind="scripted", seed=1000 * seed + i, p_garble=0.0))
                  for i, (name, path) in enumerate(hf_dirs.items())}
  c.textworld.games_dir = games_dir
  return c


def _validate(config, bd: str, base_hf: str, games_dir: str) -> list[dict]:
  """BASE and a random admissible-action reference (RANDOM, scripted: not a model) on the
  validation games at every knob setting."""
  rows = []
  for rooms, objects, quest in config.validation.settings:
    c = _eval_config(config, {"BASE": base_hf, "RANDOM": ""}, config.seed, games_dir)
    c.textworld.update(world_size=rooms, nb_objects=objects, quest_length=quest,
                       eval_seeds=list(config.validation.seeds), train_settings=[])
    c.samples, c.heldout = config.validation.samples, ""
    c.ks = [k for k in c.ks if k <= c.samples]
    out = os.path.join(bd, "validation", f"w{rooms}_o{objects}_q{quest}")
    evaluate.evaluate(c, out)
    for r in json.load(open(os.path.join(out, "summary.json")))["table"]:
      rows.append({"rooms": rooms, "objects": objects, "quest": quest,
                   "games": len(config.validation.seeds), "condition": r["condition"],
                   **{k: r[k] for k in r if k.startswith("pass@") or k in ("AF", "turns")}})
  return rows


def _evaluate(config, sd: str, bd: str, hf_dirs: dict, seed: int,
              games_dir: str) -> list[dict]:
  c = _eval_config(config, hf_dirs, seed, games_dir)
  c.heldout = os.path.join(bd, "heldout_short.jsonl")
  out = os.path.join(sd, "eval")
  evaluate.evaluate(c, out)
  return [{"seed": seed, **r} for r in json.load(open(os.path.join(out, "summary.json")))["table"]]


def _episode_rows(sd: str) -> list[dict]:
  with open(os.path.join(sd, "eval", "results.jsonl"), encoding="utf-8") as f:
    return final_rows([json.loads(line) for line in f if line.strip()], EVAL_KEY)


def _pooled_curves(config, rows_by_seed: dict, workdir: str) -> tuple[list[dict], str]:
  """pass@k per condition with every seed's attempts of a task pooled (n = seeds x samples per
  task), task-bootstrap bands with the same draws for every condition, and the PNG."""
  counts: dict = {}
  for rows in rows_by_seed.values():
    for r in rows:
      nc = counts.setdefault(r["condition"], {}).setdefault(f"{r['env']}/{r['level']}", [0, 0])
      nc[0] += 1
      nc[1] += int(r.get("status") == "success")
  counts = {c: {t: tuple(v) for t, v in tasks.items()} for c, tasks in counts.items()}
  n_min = min(n for tasks in counts.values() for n, _ in tasks.values())
  ks = [k for k in (1, 2, 4, 8, 16, 32) if k <= n_min]
  curves = passk.pass_at_k_curves(counts, ks)
  bands = passk.bootstrap_bands(counts, ks, n_resamples=config.report.n_resamples, seed=0)
  n_tasks = len(next(iter(counts.values())))
  png = passk.plot_pass_at_k(
      curves, bands, os.path.join(workdir, "passk_unseen_pooled.png"), ks=ks, n_tasks=n_tasks,
      title=f"unseen TextWorld, list regime, {len(rows_by_seed)} seeds pooled "
            f"({config.scale_label})")
  table = [{"condition": c, "tasks": n_tasks, "attempts_per_task": n_min,
            **{f"pass@{k}": 100 * float(curves[c][i]) for i, k in enumerate(ks)},
            f"pass@{ks[-1]}_lo": 100 * float(bands[c][0][-1]),
            f"pass@{ks[-1]}_hi": 100 * float(bands[c][1][-1])} for c in curves]
  return table, png


def _over_seeds(eval_rows: list[dict]) -> list[dict]:
  """Per condition: mean and sd over seeds of the per-seed metrics (null when missing)."""
  out = []
  for cond in dict.fromkeys(r["condition"] for r in eval_rows):
    mine = [r for r in eval_rows if r["condition"] == cond]
    row = {"condition": cond, "seeds": len(mine)}
    for k in _SEED_METRICS:
      vals = [r.get(k) for r in mine if r.get(k) is not None and np.isfinite(r.get(k))]
      row[f"{k}_mean"] = float(np.mean(vals)) if vals else None
      row[f"{k}_sd"] = float(np.std(vals, ddof=1)) if len(vals) > 1 else None
    out.append(row)
  return out


def run(config, workdir):
  stages = Stages(workdir)
  data_dir = os.path.join(workdir, "data")
  data_config = copy.deepcopy(config.data)
  if config.validate_only:   # the unseen games wait until the regime is chosen
    data_config.textworld.eval_seeds = []
  stages.run("data", lambda: offline_data.collect_data(data_config, data_dir), rerun=True)
  games_dir = config.data.textworld.games_dir or os.path.join(data_dir, "textworld_games")
  # BASE: one warm start (the study's "pretrained model"), shared by every seed as in the
  # audit, whose seeds vary the post-training and the evaluation sampling, not the base model
  bd = os.path.join(workdir, "base")
  base_hf = stages.run("sft", lambda: warm_start(config, bd, data_dir, config.seed),
                       rerun=True)
  validation = stages.run("validation", lambda: _validate(config, bd, base_hf, games_dir),
                          rerun=True)
  eval_rows, trained, rows_by_seed = [], {}, {}
  for seed in [] if config.validate_only else config.seeds:
    sd = os.path.join(workdir, f"seed_{seed}")
    trained[seed] = stages.run(f"train/s{seed}", lambda: _train(config, sd, bd, base_hf, seed),
                               rerun=True)
    hf_dirs = {n: base_hf if n == "BASE" else trained[seed][n]["hf_dir"]
               for n in config.conditions}
    eval_rows += stages.run(f"eval/s{seed}",
                            lambda: _evaluate(config, sd, bd, hf_dirs, seed, games_dir),
                            rerun=True)
    rows_by_seed[seed] = _episode_rows(sd)
  summary = {"scale": config.scale_label, "validation": validation,
             "regime": {"rooms": config.data.textworld.world_size,
                        "objects": config.data.textworld.nb_objects,
                        "quest": config.data.textworld.quest_length,
                        "unseen_games": len(config.data.textworld.eval_seeds)},
             "seeds": list(config.seeds)}
  sections = [("Validation (source-side games; BASE and a random-admissible reference; the "
               "knob table)", validation)]
  if rows_by_seed:
    pooled, png = _pooled_curves(config, rows_by_seed, workdir)
    seeds_table = _over_seeds(eval_rows)
    by_cs = {(r["condition"], seed): [] for seed, rows in rows_by_seed.items() for r in rows}
    for seed, rows in rows_by_seed.items():
      for r in rows:
        by_cs[(r["condition"], seed)].append(r)
    analyses, md_sections, pngs = stages.run("report", lambda: study_report(
        by_cs, outdir=os.path.join(workdir, "analysis"), n_resamples=config.report.n_resamples,
        trace_samples=config.report.trace_samples, scale_label=config.scale_label,
        min_samples=config.report.overlap_min_samples,
        overlap_pool_seeds=config.report.overlap_pool_seeds), rerun=True)
    summary.update(pooled=pooled, per_seed=eval_rows, over_seeds=seeds_table, analyses=analyses,
                   train={s: {n: {k: v for k, v in t.items() if k != "hf_dir"}
                              for n, t in ts.items()} for s, ts in trained.items()},
                   pngs=[os.path.relpath(p, workdir) for p in [png, *pngs]])
    sections += [("Unseen games, mean and sd over seeds (percent)", seeds_table)]
  else:
    md_sections = []
  summary["stages"] = stages.timings()
  md = write_summary(workdir, summary, summary.get("pooled", []),
                     title=f"World-model audit study ({config.scale_label})",
                     notes=("Tiny SFT-warm-started model, lexical stand-in embedder, rule-based "
                            "judge and trace annotator. RANDOM = a uniformly random admissible "
                            "action (scripted, not a model). Per-seed runs in seed_<i>/. Table: "
                            "unseen games, pass@k (percent) pooled over seeds, task-bootstrap "
                            "band at the largest k; none in a validate-only run."))
  with open(md, "a", encoding="utf-8") as f:
    for title, rows in sections + [("Stages (wall and CPU seconds)", summary["stages"])]:
      f.write(f"\n## {title}\n\n" + markdown_table(rows))
    for section in md_sections:
      f.write("\n" + section + "\n")
  return summary
