"""ConPAct-R/S training: curate consistent SFT rows from logged ConPAct runs, train via lib/sft.py.

Reads `config.source` (a conpact_eval workdir; its results.jsonl should come from SOURCE instances,
`split="source"`), curates the rows of `config.conditions` with `config.curate` (the Fig. 6a /
Table 20 data ablations: consistency filtering, reconciliation supervision, reconciliation replay),
and matches the token budget to `reference_epochs` passes over the ReAct SFT reference (usable
replies of the successful `react_condition` rollouts), paper Table 7. Then trains the model of
`config.model` (`lib.model_setup`: a checkpoint, or the embedded tiny random model) with AdamW on
target tokens only through the one SFT loop (`lib.sft_loop.train`, resumable from <workdir>/ckpt)
and exports an HF-format directory (<workdir>/export) that
`configs/conpact/flax.py:checkpoint=...` evaluates.
"""
import json
import math
import os

from flax import nnx

from agents.conpact import curate, schemas, textenv
from lib import model_setup, models, optim, sft_loop, train_loop
from lib import tokenizer as tokenizer_lib
from lib.results import write_summary
from lib.train_state import TrainState, nnx_apply_fn


def _load_rows(source: str) -> list[dict]:
  with open(os.path.join(source, "results.jsonl"), encoding="utf-8") as f:
    return [json.loads(line) for line in f if line.strip()]


def _batches(examples, tok, batch: int, max_len: int):
  """batch_at(step): fixed-shape batch `step` of `examples` in order (one compiled step); the last
  is filled with loss-free copies of the first examples."""
  def batch_at(step: int) -> dict:
    chunk = examples[step * batch:(step + 1) * batch]
    b = curate.sft_batch(chunk + examples[:batch - len(chunk)], tok, max_len)
    b["loss_mask"][len(chunk):] = 0
    return b
  return batch_at


def run(config, workdir):
  c = config.train
  rows = _load_rows(config.source)
  sch, task = schemas.get(config.env), textenv.task(config.env)
  rows = [r for r in rows if r["env"] == config.env]
  model, _, tok = model_setup.build_model(
      config.model, seed=config.seed, tokenizer_texts=model_setup.TINY_CORPUS,
      tokenizer_dir=os.path.join(workdir, "tiny_model"))
  if tok is None:
    raise FileNotFoundError(f"model.checkpoint {config.model.checkpoint!r} has no tokenizer.json")
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
  apply_fn, params = nnx_apply_fn(model, compute_dtype=model_setup.compute_dtype(config.model))
  tx = optim.adamw(c.lr, steps, warmup_frac=0.05)
  run_ = sft_loop.train(apply_fn, TrainState.create(params, tx), tx,
                        _batches(picked, tok, c.batch, c.max_len), steps, workdir,
                        log_every=c.log_every, ckpt_every=c.ckpt_every,
                        prefix="conpact_train/", start_fresh=train_loop.fresh_start(config))
  nnx.update(model, run_.state.params)
  losses = [loss for _, loss in run_.history]
  export = os.path.join(workdir, "export")
  tokenizer_lib.save_tokenizer(tok, export)
  models.save_pretrained(model, model.config, export)
  by_source = {s: sum(ex["source"] == s for ex in picked) for s in sorted({e["source"] for e in picked})}
  summary = {"curated": len(examples), "picked": len(picked), "reference_examples": len(reference),
             "token_budget": budget, "tokens_used": int(sum(count(e) for e in picked)),
             "steps": run_.steps, "train_tokens": run_.train_tokens, "loss_first": losses[0],
             "loss_last": losses[-1], "by_source": by_source, "export": export,
             "curate": dict(config.curate)}
  write_summary(workdir, summary, [{k: v for k, v in summary.items() if k != "curate"}],
                title="ConPAct-R/S curated SFT",
                notes="Loss on target replies only; token budget matched to "
                      f"{config.reference_epochs} epochs of the ReAct reference.")
  return summary
