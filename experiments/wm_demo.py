"""CPU-scale demonstration of the whole world-model audit pipeline (labelled CPU scale throughout).

Stages (each resumable; wall and CPU seconds of each are in the summary):
  data    experiments/wm_data.py on ScienceWorld + TextWorld levels (expert / noisy expert)
  sft     a tiny Qwen3 with a BPE trained on the data, SFT-warm-started on next-observation
          replies (<think>..</think><next_state>..</next_state>) and expert agent replies
          (<think>..</think><action>..</action>) so that it emits the tags: this is BASE
  train   experiments/wm_train.py for each configured condition, starting from BASE
  eval    experiments/wm_eval.py with every condition as a flax backend: pass@k PNGs, McNemar,
          loop-ratio table, rule-based prediction accuracy on held-out transitions
  probes  agents/wm/probes_model.py at TextWorld decision points: prediction preference, direct /
          sampled action-distribution overlap with BASE, CoT length
"""
import copy
import json
import os
import resource
import time

import jax
import numpy as np
from absl import logging

from agents.wm import data, policy, probes_model
from agents.wm.prompts import agent_prompt
from agents.wm.trajectory import ExpertPolicy, Trajectory
from experiments import wm_data, wm_eval, wm_train
from experiments.wm_data import text_env_sources
from lib import models, optim, sft, tb, tokenizer as tokenizer_lib
from lib.checkpoint import Checkpointer
from lib.llm.factory import backend_config
from lib.results import write_summary
from lib.rewards import mismatched_targets
from lib.train_state import TrainState, nnx_apply_fn


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


def _sft_rows(samples, trajs, history_window):
  """(messages, reply) pairs: world-model replies and expert agent replies (no-list regime)."""
  rows = [(data.prompt_messages(s),
           f"<think>After {s.action}, the world changes.</think>"
           f"<next_state>{s.next_obs}</next_state>") for s in samples]
  for traj in trajs:
    hist = []
    for t, step in enumerate(traj.steps):
      if step.action is not None:
        prompt = agent_prompt(traj.env, traj.task, hist[-history_window:], step.obs, t)
        rows.append(([{"role": "user", "content": prompt}],
                     f"<think>I should {step.action}.</think><action>{step.action}</action>"))
      hist.append((step.obs, step.action))
  return rows


def _sft(config, workdir, data_dir):
  out = os.path.join(workdir, "base_hf")
  if os.path.exists(os.path.join(out, "tokenizer.json")):
    return out
  c = config.sft
  samples = data.load_samples(os.path.join(data_dir, "train.jsonl"))
  rows_json = [json.loads(l) for l in open(os.path.join(data_dir, "results.jsonl"))]
  trajs = [Trajectory.from_json(r["trajectory"]) for r in rows_json
           if r.get("split") == "train" and r.get("rep") == 0 and "trajectory" in r]
  pairs = _sft_rows(samples, trajs, config.history_window)
  corpus = [m[0]["content"] + r for m, r in pairs] + wm_train.corpus(samples)
  model, tok = policy.load_policy(config.model, config.seed, workdir, corpus)
  end = tok.convert_tokens_to_ids(tokenizer_lib.IM_END)
  encoded = []
  for msgs, reply in pairs:
    prompt = policy.encode_chat(tok, msgs)
    target = tok.encode(reply, add_special_tokens=False) + [end]
    if len(prompt) + len(target) <= c.max_len:
      encoded.append((prompt, target))
  if not encoded:
    raise ValueError(f"no SFT row fits max_len={c.max_len}")
  tx = optim.from_config(config.sft_optim, c.steps)
  apply_fn, params = nnx_apply_fn(model)
  state = TrainState.create(params, tx)
  step = jax.jit(sft.make_sft_step(apply_fn, tx), donate_argnums=0)
  ckpt = Checkpointer(os.path.join(workdir, "sft_ckpt"), max_to_keep=1)
  start = 0
  if ckpt.latest_step() is not None:
    state, meta = ckpt.restore(template=state)
    start = meta["step"]
  losses = []
  for it in range(start, c.steps):
    idx = np.random.default_rng([config.seed, it]).choice(len(encoded), c.batch)
    chunk = [encoded[i] for i in idx]
    length = max(len(p) + len(t) for p, t in chunk)
    length = max(64, 1 << (length - 1).bit_length())
    batch = {k: np.zeros((len(chunk), length), np.int32)
             for k in ("input_ids", "attention_mask", "loss_mask")}
    for r, (p, t) in enumerate(chunk):
      n = len(p) + len(t)
      batch["input_ids"][r, :n] = p + t
      batch["attention_mask"][r, :n] = 1
      batch["loss_mask"][r, len(p):n] = 1
    state, m = step(state, batch)
    losses.append(float(m["loss"]))
    if (it + 1) % c.log_every == 0:
      tb.scalars(workdir, it + 1, {"loss": float(np.mean(losses[-c.log_every:]))}, prefix="sft/")
      logging.info("demo sft step %d: loss %.3f", it + 1, np.mean(losses[-c.log_every:]))
    if (it + 1) % c.ckpt_every == 0 or it + 1 == c.steps:
      ckpt.save(it + 1, state)
  policy.export(model, state.params, tok, out)
  with open(os.path.join(workdir, "sft_summary.json"), "w") as f:
    json.dump({"rows": len(encoded), "dropped": len(pairs) - len(encoded),
               "loss_first": losses[0] if losses else None,
               "loss_last": float(np.mean(losses[-10:])) if losses else None}, f)
  return out


def _train(config, workdir, data_dir, base_hf):
  out = {}
  for name in config.conditions:
    c = copy.deepcopy(config.train_template)
    c.condition = name
    c.grpo.permute_scores = name.endswith("PERM")
    c.data.train = os.path.join(data_dir, "train.jsonl")
    c.model.checkpoint = base_hf
    out[name] = wm_train.run(c, os.path.join(workdir, "train", name))
  return out


def _eval(config, workdir, data_dir, hf_dirs):
  c = copy.deepcopy(config.eval)
  c.conditions = {name: backend_config("flax", checkpoint=path, max_batch=8, seed=i)
                  for i, (name, path) in enumerate(hf_dirs.items())}
  c.heldout = os.path.join(data_dir, "heldout.jsonl")
  c.textworld.games_dir = os.path.join(data_dir, "textworld_games")
  out = os.path.join(workdir, "eval")
  wm_eval.run(c, out)
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
  held = data.load_samples(os.path.join(data_dir, "heldout.jsonl"))[:config.probes.samples]
  mis = mismatched_targets([s.next_obs for s in held], seed=config.seed)
  loaded = {}
  for name, path in hf_dirs.items():
    model, _ = models.load_pretrained(path, dtype="float32")
    loaded[name] = (model, tokenizer_lib.load_tokenizer(path))
  return probes_model.probe_conditions(loaded, points, held, mis,
                                       n_samples=config.probes.n_samples,
                                       max_new_tokens=config.probes.max_new_tokens,
                                       seed=config.seed), len(points)


def run(config, workdir):
  stages = Stages(workdir)
  data_dir = os.path.join(workdir, "data")
  stages.run("data", lambda: wm_data.run(config.data, data_dir))
  base_hf = stages.run("sft", lambda: _sft(config, workdir, data_dir))
  trained = stages.run("train", lambda: _train(config, workdir, data_dir, base_hf))
  hf_dirs = {"BASE": base_hf, **{n: s["hf_dir"] for n, s in trained.items()}}
  ev = stages.run("eval", lambda: _eval(config, workdir, data_dir, hf_dirs))
  probe_rows, n_points = stages.run("probes", lambda: _probes(config, workdir, data_dir, hf_dirs))
  sft_sum = json.load(open(os.path.join(workdir, "sft_summary.json")))
  train_rows = [{k: s[k] for k in ("condition", "steps", "samples", "dropped_over_length",
                                   "signal_first", "signal_last", "wall_s", "cpu_s")}
                for s in trained.values()]
  summary = {"scale": config.scale_label, "sft": sft_sum, "train": train_rows,
             "eval_table": ev["table"], "coverage_tests": ev["summary"]["coverage_tests"],
             "prediction": ev["summary"]["prediction"], "probes": probe_rows,
             "decision_points": n_points, "stages": list(stages.rows.values()),
             "passk_pngs": sorted(f for f in os.listdir(os.path.join(workdir, "eval"))
                                  if f.endswith(".png"))}
  write_summary(workdir, summary, probe_rows + list(stages.rows.values()),
                title=f"World-model audit demonstration ({config.scale_label})",
                notes=("Tiny SFT-warm-started model, lexical stand-in embedder, rule-based judge: "
                       "mechanics of the pipeline, not the paper's results. Evaluation tables "
                       "and pass@k PNGs are in eval/; per-condition training in train/<cond>/. "
                       "Probe rows: prediction preference (nats), CoT length, overlap with BASE; "
                       "stage rows: wall and CPU seconds (CPU includes the JVM)."))
  return summary
