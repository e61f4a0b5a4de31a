"""CPU-scale demonstration of the whole world-model audit pipeline (labelled CPU scale throughout).

Stages (lib/run/stages.py; each runs again in every session and resumes from its own outputs; wall
and CPU seconds of each are in stages.json and the summary):
  data    agents/wm/offline_data.py on ScienceWorld + TextWorld levels (expert / noisy expert)
  sft     a tiny Qwen3 with a BPE trained on the data, SFT-warm-started (agents/wm/warmstart.py)
          on short next-observation replies (<think>action</think><next_state>..</next_state>)
          and (noisy-)expert agent replies (<think>action</think><action>..</action>), in the
          list regime too where the env listed admissible actions, so that it closes
          its tags: this is BASE. Only transitions whose reply fits the RL output budget and
          whose prompt fits the input budget are kept (train_short.jsonl, heldout_short.jsonl:
          CPU scale). A GRPO-GT check on BASE (well-formed replies, reward mean/std, groups with
          a non-zero advantage) is recorded before any RL step
  train   agents/wm/train.py for each configured condition, starting from BASE
  eval    agents/wm/evaluate.py with every condition as a flax backend: pass@k PNGs, McNemar,
          loop-ratio table, domain breakdown, CoT length, rule-based prediction accuracy on
          held-out transitions
  probes  agents/wm/probes_model.py at TextWorld decision points: prediction preference, direct /
          sampled action-distribution overlap with BASE, CoT length
"""
import copy
import json
import os

from agents.wm import evaluate, offline_data, train
from agents.wm.pipeline import probes, warm_start
from lib.run.config_blocks import backend_config
from lib.run.results import markdown_table, write_summary
from lib.run.stages import Stages


def _train(config, workdir, base_hf):
  out = {}
  for name in config.conditions:
    c = copy.deepcopy(config.train_template)
    c.condition = name
    c.grpo.permute_scores = name.endswith("PERM")
    c.data.train = os.path.join(workdir, "train_short.jsonl")
    c.model.checkpoint = base_hf
    out[name] = train.train_condition(c, os.path.join(workdir, "train", name))
  return out


def _eval(config, workdir, data_dir, hf_dirs):
  c = copy.deepcopy(config.eval)
  c.conditions = {name: backend_config("flax", model=dict(checkpoint=path), max_batch=8, seed=i)
                  for i, (name, path) in enumerate(hf_dirs.items())}
  c.heldout = os.path.join(workdir, "heldout_short.jsonl")
  c.textworld.games_dir = os.path.join(data_dir, "textworld_games")
  out = os.path.join(workdir, "eval")
  evaluate.evaluate(c, out)
  return json.load(open(os.path.join(out, "summary.json")))


# Per condition: what the trainer saw (signal = GRPO mean reward or OPSD JSD; well_formed =
# replies with a complete <next_state>; reward spread and groups with a non-zero advantage).
_TRAIN_FIELDS = ("condition", "steps", "samples", "dropped_over_length", "signal_first",
                 "signal_last", "signal_mean", "reward_std_mean", "nonzero_adv_group_frac_mean",
                 "well_formed_mean", "target_span_tokens_mean", "wall_s", "cpu_s")


def run(config, workdir):
  stages = Stages(workdir)
  data_dir = os.path.join(workdir, "data")
  stages.run("data", lambda: offline_data.collect_data(config.data, data_dir), rerun=True)
  base_hf = stages.run("sft", lambda: warm_start(config, workdir, data_dir, config.seed),
                       rerun=True)
  trained = stages.run("train", lambda: _train(config, workdir, base_hf), rerun=True)
  hf_dirs = {"BASE": base_hf, **{n: s["hf_dir"] for n, s in trained.items()}}
  ev = stages.run("eval", lambda: _eval(config, workdir, data_dir, hf_dirs), rerun=True)
  games_dir = os.path.join(data_dir, "textworld_games")
  probe_rows, n_points = stages.run(
      "probes", lambda: probes(config, workdir, games_dir, hf_dirs, config.seed), rerun=True)
  sft_sum = json.load(open(os.path.join(workdir, "sft_summary.json")))
  train_rows = [{k: s.get(k) for k in _TRAIN_FIELDS} for s in trained.values()]
  summary = {"scale": config.scale_label, "sft": sft_sum, "train": train_rows,
             "eval_table": ev["table"], "coverage_tests": ev["summary"]["coverage_tests"],
             "domains": ev["summary"]["domains"], "cot": ev["summary"]["cot"],
             "prediction": ev["summary"]["prediction"], "probes": probe_rows,
             "decision_points": n_points, "stages": stages.timings(),
             "passk_pngs": sorted(f for f in os.listdir(os.path.join(workdir, "eval"))
                                  if f.endswith(".png"))}
  md = write_summary(
      workdir, summary, train_rows,
      title=f"World-model audit demonstration ({config.scale_label})",
      notes=("Tiny SFT-warm-started model, lexical stand-in embedder, rule-based judge: "
             "mechanics of the pipeline, not the paper's results. Per-condition training in "
             "train/<cond>/, evaluation tables and pass@k PNGs in eval/. Table: training "
             "(signal = GRPO mean reward or OPSD student-teacher JSD)."))
  check = {"stage": "BASE before RL (GRPO-GT groups)", **sft_sum["check"]}
  check.pop("example", None)
  sections = [
      ("Warm start", [check]),
      ("Evaluation", ev["table"]),
      ("Domain breakdown", ev["summary"]["domains"]),
      ("Chain-of-thought length (evaluation replies)", ev["summary"]["cot"]),
      ("Probes (prediction preference in nats, CoT tokens, overlap with BASE)", probe_rows),
      ("Stages (wall and CPU seconds; CPU includes the JVM)", stages.timings())]
  with open(md, "a", encoding="utf-8") as f:
    for title, rows in sections:
      f.write(f"\n## {title}\n\n" + markdown_table(rows))
  return summary
