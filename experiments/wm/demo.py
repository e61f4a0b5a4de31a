"""CPU-scale demonstration of the whole world-model audit pipeline (labelled CPU scale throughout).

Stages (each resumable; wall and CPU seconds of each are in the summary):
  data    experiments/wm/data.py on ScienceWorld + TextWorld levels (expert / noisy expert)
  sft     a tiny Qwen3 with a BPE trained on the data, SFT-warm-started (agents/wm/warmstart.py)
          on short next-observation replies (<think>action</think><next_state>..</next_state>)
          and (noisy-)expert agent replies (<think>action</think><action>..</action>), in the
          list regime too where the env listed admissible actions, so that it closes
          its tags: this is BASE. Only transitions whose reply fits the RL output budget and
          whose prompt fits the input budget are kept (train_short.jsonl, heldout_short.jsonl:
          CPU scale). A GRPO-GT check on BASE (well-formed replies, reward mean/std, groups with
          a non-zero advantage) is recorded before any RL step
  train   experiments/wm/train.py for each configured condition, starting from BASE
  eval    experiments/wm/eval.py with every condition as a flax backend: pass@k PNGs, McNemar,
          loop-ratio table, domain breakdown, CoT length, rule-based prediction accuracy on
          held-out transitions
  probes  agents/wm/probes_model.py at TextWorld decision points: prediction preference, direct /
          sampled action-distribution overlap with BASE, CoT length
"""
import copy
import json
import os
import resource
import time

import numpy as np
from absl import logging

from agents.wm import data, embedders, policy, probes_model, warmstart
from agents.wm.trajectory import ExpertPolicy, Trajectory
from envs.text.sources import text_env_sources
from experiments import registry
from lib import model_setup
from lib.llm.factory import backend_config
from lib.results import markdown_table, write_summary
from lib.rewards import mismatched_targets


def _cpu_s() -> float:
  self_, kids = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
  return self_.ru_utime + self_.ru_stime + kids.ru_utime + kids.ru_stime


class Stages:
  """Times each stage (wall + CPU incl. child processes such as the ScienceWorld JVM), summed
  over the sessions of a resumed run."""

  def __init__(self, workdir):
    self.path = os.path.join(workdir, "stages.json")
    self.rows = json.load(open(self.path)) if os.path.exists(self.path) else {}

  def run(self, name, fn):
    t, c = time.perf_counter(), _cpu_s()
    out = fn()
    # A resumed stage adds to the seconds its earlier sessions recorded.
    before = self.rows.get(name, {"wall_s": 0.0, "cpu_s": 0.0})
    self.rows[name] = {"stage": name,
                       "wall_s": round(before["wall_s"] + time.perf_counter() - t, 1),
                       "cpu_s": round(before["cpu_s"] + _cpu_s() - c, 1)}
    with open(self.path, "w") as f:
      json.dump(self.rows, f)
    logging.info("demo stage %s: %s", name, self.rows[name])
    return out


def _sft(config, workdir, data_dir):
  """Tokenizer + tiny model, the short-target subsets the RL stages use, SFT warm start (BASE),
  and GRPO-GT's view of BASE (well-formed replies, reward spread) before any RL step."""
  out = os.path.join(workdir, "base_hf")
  if os.path.exists(os.path.join(out, "tokenizer.json")):
    return out
  c, t = config.sft, config.train_template.train
  samples = data.load_samples(os.path.join(data_dir, "train.jsonl"))
  held = data.load_samples(os.path.join(data_dir, "heldout.jsonl"))
  rows_json = [json.loads(l) for l in open(os.path.join(data_dir, "results.jsonl"))]
  # Agent rows: expert episodes only, or (agent_rows="all") the noisy-expert ones too, a weaker
  # behaviour policy whose off-plan steps are still admissible actions copied from the list.
  agent_rows = c.get("agent_rows", "expert")
  if agent_rows not in ("expert", "all"):
    raise ValueError(f"sft.agent_rows must be 'expert' or 'all', got {agent_rows!r}")
  trajs = [Trajectory.from_json(r["trajectory"]) for r in rows_json
           if r.get("split") == "train" and "trajectory" in r
           and (agent_rows == "all" or r.get("rep") == 0)]
  corpus = ([m[0]["content"] + r for m, r in warmstart.sft_rows(samples, trajs,
                                                                config.history_window)]
            + data.tokenizer_corpus(samples))
  model, tok = policy.load_policy(config.model, config.seed, workdir, corpus)
  # CPU scale: only transitions whose reply closes its tag within the RL output budget and whose
  # prompt fits the input budget (Table 6 drops over-long inputs the same way).
  fit = lambda s: (warmstart.fits(tok, s, t.max_output_tokens) and
                   len(policy.encode_chat(tok, data.prompt_messages(s))) <= t.max_input_tokens)
  short, short_held = [s for s in samples if fit(s)], [s for s in held if fit(s)]
  data.save_jsonl(os.path.join(workdir, "train_short.jsonl"), short)
  data.save_jsonl(os.path.join(workdir, "heldout_short.jsonl"), short_held)
  rows = warmstart.sft_rows(short, trajs, config.history_window, c.teacher_view)
  encoded = warmstart.encode_rows(tok, rows, c.max_len)
  params, losses = warmstart.sft(model, encoded, c, config.sft_optim, config.seed, workdir)
  policy.export(model, params, tok, out)
  check = warmstart.rollout_check(
      model, tok, short, prompts=config.check.prompts, group_size=config.train_template.grpo
      .group_size, max_output_tokens=t.max_output_tokens,
      embedder=embedders.make_embedder(config.train_template.embedder),
      threshold=config.train_template.reward.threshold, seed=config.seed)
  logging.info("warm start check: %s", check)
  with open(os.path.join(workdir, "sft_summary.json"), "w") as f:
    json.dump({"train_samples": len(samples), "train_short": len(short),
               "heldout": len(held), "heldout_short": len(short_held),
               "rows": len(encoded), "dropped": len(rows) - len(encoded),
               "agent_steps": sum(s.action is not None for t in trajs for s in t.steps),
               "agent_steps_listed": sum(s.action is not None and bool(s.admissible)
                                         for t in trajs for s in t.steps),
               "loss_first": losses[0] if losses else None,
               "loss_last": float(np.mean(losses[-10:])) if losses else None,
               "check": check}, f)
  return out


def _train(config, workdir, base_hf):
  out = {}
  for name in config.conditions:
    c = copy.deepcopy(config.train_template)
    c.condition = name
    c.grpo.permute_scores = name.endswith("PERM")
    c.data.train = os.path.join(workdir, "train_short.jsonl")
    c.model.checkpoint = base_hf
    out[name] = registry.get("wm/train")(c, os.path.join(workdir, "train", name))
  return out


def _eval(config, workdir, data_dir, hf_dirs):
  c = copy.deepcopy(config.eval)
  c.conditions = {name: backend_config("flax", model=dict(checkpoint=path), max_batch=8, seed=i)
                  for i, (name, path) in enumerate(hf_dirs.items())}
  c.heldout = os.path.join(workdir, "heldout_short.jsonl")
  c.textworld.games_dir = os.path.join(data_dir, "textworld_games")
  out = os.path.join(workdir, "eval")
  registry.get("wm/eval")(c, out)
  return json.load(open(os.path.join(out, "summary.json")))


def _decision_points(config, workdir, data_dir):
  """The first `per_game` expert states of each TextWorld eval game (admissible list kept)."""
  c = copy.deepcopy(config.eval)
  c.textworld.games_dir = os.path.join(data_dir, "textworld_games")
  c.scienceworld.enabled, c.alfworld.enabled = False, False
  make_env, levels = text_env_sources(c, workdir, 30)["textworld"]
  env, points = make_env("eval"), []
  for level in range(len(levels["eval"])):
    obs, info = env.reset(level)
    expert = ExpertPolicy()
    expert.reset(env, obs, info)
    hist = []
    for t in range(config.probes.per_game):
      points.append(probes_model.DecisionPoint("textworld", info.get("task", ""),
                                               hist[-config.history_window:], obs, t,
                                               list(info.get("admissible_actions") or [])))
      action = expert.act(obs, info)
      hist.append((obs, action))
      obs, _, term, trunc, info = env.step(action)
      if term or trunc:
        break
  env.close()
  return [p for p in points if p.admissible]


def _probes(config, workdir, data_dir, hf_dirs):
  points = _decision_points(config, workdir, data_dir)
  held = data.load_samples(os.path.join(workdir, "heldout_short.jsonl"))[:config.probes.samples]
  mis = mismatched_targets([s.next_obs for s in held], seed=config.seed)
  loaded = {}
  for name, path in hf_dirs.items():
    model, _, tok = model_setup.build_model(model_setup.model_block(checkpoint=path), seed=0)
    loaded[name] = (model, tok)
  return probes_model.probe_conditions(loaded, points, held, mis,
                                       n_samples=config.probes.n_samples,
                                       max_new_tokens=config.probes.max_new_tokens,
                                       seed=config.seed), len(points)


# Per condition: what the trainer saw (signal = GRPO mean reward or OPSD JSD; well_formed =
# replies with a complete <next_state>; reward spread and groups with a non-zero advantage).
_TRAIN_FIELDS = ("condition", "steps", "samples", "dropped_over_length", "signal_first",
                 "signal_last", "signal_mean", "reward_std_mean", "nonzero_adv_group_frac_mean",
                 "well_formed_mean", "target_span_tokens_mean", "wall_s", "cpu_s")


def run(config, workdir):
  stages = Stages(workdir)
  data_dir = os.path.join(workdir, "data")
  stages.run("data", lambda: registry.get("wm/data")(config.data, data_dir))
  base_hf = stages.run("sft", lambda: _sft(config, workdir, data_dir))
  trained = stages.run("train", lambda: _train(config, workdir, base_hf))
  hf_dirs = {"BASE": base_hf, **{n: s["hf_dir"] for n, s in trained.items()}}
  ev = stages.run("eval", lambda: _eval(config, workdir, data_dir, hf_dirs))
  probe_rows, n_points = stages.run("probes", lambda: _probes(config, workdir, data_dir, hf_dirs))
  sft_sum = json.load(open(os.path.join(workdir, "sft_summary.json")))
  train_rows = [{k: s.get(k) for k in _TRAIN_FIELDS} for s in trained.values()]
  summary = {"scale": config.scale_label, "sft": sft_sum, "train": train_rows,
             "eval_table": ev["table"], "coverage_tests": ev["summary"]["coverage_tests"],
             "domains": ev["summary"]["domains"], "cot": ev["summary"]["cot"],
             "prediction": ev["summary"]["prediction"], "probes": probe_rows,
             "decision_points": n_points, "stages": list(stages.rows.values()),
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
      ("Stages (wall and CPU seconds; CPU includes the JVM)", list(stages.rows.values()))]
  with open(md, "a", encoding="utf-8") as f:
    for title, rows in sections:
      f.write(f"\n## {title}\n\n" + markdown_table(rows))
  return summary
