"""ConPAct-R/S training: curate consistent SFT rows from logged ConPAct runs, train via lib/sft.py.

Reads `config.source` (a conpact_eval workdir; its results.jsonl should come from SOURCE instances,
`split="source"`), curates the rows of `config.conditions` with `config.curate` (the Fig. 6a /
Table 20 data ablations: consistency filtering, reconciliation supervision, reconciliation replay),
and matches the token budget to `reference_epochs` passes over the ReAct SFT reference (usable
replies of the successful `react_condition` rollouts), paper Table 7. Then trains the Flax model
(`checkpoint`, or the embedded tiny random model) with AdamW on target tokens only and exports an
HF-format directory (<workdir>/export) that `configs/conpact/flax.py:checkpoint=...` evaluates.
"""
import json
import math
import os

import jax
import numpy as np
from absl import logging
from flax import nnx

from agents.conpact import curate, schemas, textenv
from lib import models, optim, sft, tb
from lib.llm.flax_backend import FlaxBackend
from lib.results import write_summary
from lib.train_state import TrainState, nnx_apply_fn


def _load_rows(source: str) -> list[dict]:
  with open(os.path.join(source, "results.jsonl"), encoding="utf-8") as f:
    return [json.loads(line) for line in f if line.strip()]


def _batches(examples, tok, batch: int, max_len: int):
  """Fixed-shape batches (one compiled step); the last is filled with loss-free copies."""
  for i in range(0, len(examples), batch):
    chunk = examples[i:i + batch]
    b = curate.sft_batch(chunk + examples[:batch - len(chunk)], tok, max_len)
    b["loss_mask"][len(chunk):] = 0
    yield b


def run(config, workdir):
  c = config.train
  rows = _load_rows(config.source)
  sch, task = schemas.get(config.env), textenv.task(config.env)
  rows = [r for r in rows if r["env"] == config.env]
  backend = (FlaxBackend.from_pretrained(config.checkpoint) if config.checkpoint
             else FlaxBackend.tiny(os.path.join(workdir, "tiny_model"), seed=config.seed))
  tok, model = backend.tokenizer, backend.model
  examples = curate.curate([r for r in rows if r["condition"] in config.conditions], sch,
                           task.action_names, curate.CurateConfig(**config.curate))
  reference = curate.react_reference([r for r in rows if r["condition"] == config.react_condition],
                                     sch, task.action_names)
  count = lambda ex: min(len(curate.tokenize(ex, tok)[0]), c.max_len)
  budget = curate.reference_budget(reference, count, config.reference_epochs)
  picked = curate.match_budget(examples, budget, count, seed=config.seed)
  if not picked:
    raise ValueError(f"no training examples: {len(examples)} curated, reference budget {budget}")
  steps = math.ceil(len(picked) / c.batch)
  if c.max_steps:
    steps = min(steps, c.max_steps)
  apply_fn, params = nnx_apply_fn(model)
  tx = optim.adamw(c.lr, steps, warmup_frac=0.05)
  state = TrainState.create(params, tx)
  step = jax.jit(sft.make_sft_step(apply_fn, tx), donate_argnums=0)
  writer, losses, tokens = tb.writer(workdir), [], 0
  for it, batch in enumerate(_batches(picked, tok, c.batch, c.max_len)):
    if it >= steps:
      break
    state, m = step(state, batch)
    losses.append(float(m["loss"]))
    tokens += int(m["train_tokens"])
    writer.add_scalar("conpact_train/loss", losses[-1], it + 1)
    logging.info("step %d/%d loss %.4f", it + 1, steps, losses[-1])
  nnx.update(model, state.params)
  export = os.path.join(workdir, "export")
  tok.save_pretrained(export)
  models.save_pretrained(model, model.config, export)
  by_source = {s: sum(ex["source"] == s for ex in picked) for s in sorted({e["source"] for e in picked})}
  summary = {"curated": len(examples), "picked": len(picked), "reference_examples": len(reference),
             "token_budget": budget, "tokens_used": int(sum(count(e) for e in picked)),
             "steps": len(losses), "train_tokens": tokens, "loss_first": losses[0],
             "loss_last": losses[-1], "by_source": by_source, "export": export,
             "curate": dict(config.curate)}
  write_summary(workdir, summary, [{k: v for k, v in summary.items() if k != "curate"}],
                title="ConPAct-R/S curated SFT",
                notes="Loss on target replies only; token budget matched to "
                      f"{config.reference_epochs} epochs of the ReAct reference.")
  return summary
