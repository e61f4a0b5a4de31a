"""Stages shared by the world-model audit's CPU pipelines (experiments/wm/demo.py, study.py).

  stages = Stages(workdir)                       # lib/run/stages.py: status, wall + CPU seconds
  base_hf = stages.run("sft", lambda: warm_start(config, workdir, data_dir, seed), rerun=True)
  points = decision_points(config, workdir, games_dir)
  rows, n = probes(config, workdir, games_dir, hf_dirs)

warm_start: a tokenizer + tiny model, the short-target subsets the RL stages use
(train_short.jsonl / heldout_short.jsonl in `workdir`), the SFT warm start (BASE, exported as an
HF directory `workdir/base_hf`) and GRPO-GT's view of BASE before any RL step
(`workdir/sft_summary.json`). Reads the config blocks `sft`, `sft_optim`, `model`, `check`,
`train_template` and `history_window`; `seed` sets the model init and the SFT data order.
"""
import copy
import json
import os

import numpy as np
from absl import logging

from agents.wm import data, embedders, policy, probes_model, warmstart
from agents.wm.rewards import mismatched_targets
from agents.wm.trajectory import ExpertPolicy, Trajectory
from envs.text.sources import text_env_sources
from lib.models import model_setup, tokenizer as tokenizer_lib
from lib.run import config_blocks
from lib.run.jsonl import write_jsonl
from lib.sft import chat_rows


def _fits(tok, s: data.WMSample, t) -> bool:
  """CPU scale: the reply closes its tag within the RL output budget and the prompt fits the
  input budget (Table 6 drops over-long inputs the same way)."""
  return (warmstart.fits(tok, s, t.max_output_tokens) and
          len(policy.encode_chat(tok, data.prompt_messages(s))) <= t.max_input_tokens)


def warm_start(config, workdir: str, data_dir: str, seed: int) -> str:
  """Tokenizer + tiny model, the short-target subsets the RL stages use, SFT warm start (BASE),
  and GRPO-GT's view of BASE (well-formed replies, reward spread) before any RL step."""
  out = os.path.join(workdir, "base_hf")
  c, t = config.sft, config.train_template.train
  if os.path.exists(os.path.join(out, "tokenizer.json")):
    # Held-out transitions may have been added since (a validate-only run, then the full one).
    held = data.load_samples(os.path.join(data_dir, "heldout.jsonl"))
    tok = tokenizer_lib.load_tokenizer(out)
    write_jsonl(os.path.join(workdir, "heldout_short.jsonl"),
                [s.to_json() for s in held if _fits(tok, s, t)])
    return out
  samples = data.load_samples(os.path.join(data_dir, "train.jsonl"))
  held = data.load_samples(os.path.join(data_dir, "heldout.jsonl"))
  rows_json = [json.loads(l) for l in open(os.path.join(data_dir, "results.jsonl"))]
  # Agent rows: expert episodes only, or (agent_rows="all") the noisy-expert ones too, a weaker
  # behaviour policy whose off-plan steps are still admissible actions copied from the list.
  agent_rows = c.agent_rows
  if agent_rows not in ("expert", "all"):
    raise ValueError(f"sft.agent_rows must be 'expert' or 'all', got {agent_rows!r}")
  trajs = [Trajectory.from_json(r["trajectory"]) for r in rows_json
           if r.get("split") == "train" and "trajectory" in r
           and (agent_rows == "all" or r.get("rep") == 0)]
  corpus = ([m[0]["content"] + r for m, r in warmstart.sft_rows(samples, trajs,
                                                                config.history_window)]
            + data.tokenizer_corpus(samples))
  model, tok = policy.load_policy(config.model, seed, workdir, corpus)
  short = [s for s in samples if _fits(tok, s, t)]
  short_held = [s for s in held if _fits(tok, s, t)]
  write_jsonl(os.path.join(workdir, "train_short.jsonl"), [s.to_json() for s in short])
  write_jsonl(os.path.join(workdir, "heldout_short.jsonl"), [s.to_json() for s in short_held])
  rows = warmstart.sft_rows(short, trajs, config.history_window, c.teacher_view,
                            c.drop_repeats)
  encoded = chat_rows.encode_rows(tok, rows, c.max_len)
  params, losses = warmstart.sft(model, encoded, c, config.sft_optim, seed, workdir)
  steps = warmstart.sft_steps(c, len(encoded))
  policy.export(model, params, tok, out)
  check = warmstart.rollout_check(
      model, tok, short, prompts=config.check.prompts, group_size=config.train_template.grpo
      .group_size, max_output_tokens=t.max_output_tokens,
      embedder=embedders.make_embedder(config.train_template.embedder),
      threshold=config.train_template.reward.threshold, seed=seed)
  logging.info("warm start check: %s", check)
  with open(os.path.join(workdir, "sft_summary.json"), "w") as f:
    json.dump({"train_samples": len(samples), "train_short": len(short),
               "heldout": len(held), "heldout_short": len(short_held),
               "rows": len(encoded), "dropped": len(rows) - len(encoded),
               "steps": steps, "epochs": round(steps * c.batch / len(encoded), 2),
               "agent_steps": sum(s.action is not None for t in trajs for s in t.steps),
               "agent_steps_listed": sum(s.action is not None and bool(s.admissible)
                                         for t in trajs for s in t.steps),
               "loss_first": losses[0] if losses else None,
               "loss_last": float(np.mean(losses[-10:])) if losses else None,
               "check": check}, f)
  return out


def decision_points(config, workdir: str, games_dir: str) -> list:
  """The first `per_game` expert states of each TextWorld eval game (admissible list kept)."""
  c = copy.deepcopy(config.eval)
  c.textworld.games_dir = games_dir
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


def probes(config, workdir: str, games_dir: str, hf_dirs: dict, seed: int = 0):
  points = decision_points(config, workdir, games_dir)
  held = data.load_samples(os.path.join(workdir, "heldout_short.jsonl"))[:config.probes.samples]
  mis = mismatched_targets([s.next_obs for s in held], seed=seed)
  loaded = {}
  for name, path in hf_dirs.items():
    model, _, tok = model_setup.build_model(config_blocks.model_block(checkpoint=path), seed=0)
    loaded[name] = (model, tok)
  return probes_model.probe_conditions(loaded, points, held, mis,
                                       n_samples=config.probes.n_samples,
                                       max_new_tokens=config.probes.max_new_tokens,
                                       seed=seed), len(points)
