"""gencoord/sender_probe: can a from-scratch model learn the sender's obtain quantity?

For each condition of `config.conditions` (training sequences, number tokens, width): draws the
training pairs and a disjoint test set (agents/gencoord/learned/sender_probe.py), trains the
DSL BPE and a tiny Qwen3 on them with the GenCoord SFT loop (target-only loss), and scores
teacher-forced greedy exact match on the test set and on the first `eval_rows` training rows.
"""
import math
import os

import jax.numpy as jnp
import ml_collections
import numpy as np
from absl import logging

from agents.gencoord.learned import sender_probe, tokenizer as dsl_tokenizer, train
from lib.run.results import write_summary
from lib.sft import batches as sft_batches


def _arrays(tok, pairs) -> dict:
  examples = [(tok.encode(p + "\n", add_special_tokens=False),
               tok.encode(t, add_special_tokens=False) + [tok.eos_token_id]) for p, t in pairs]
  return sft_batches.left_padded(examples, tok.pad_token_id or 0)


def _exact(model, arrays, batch: int = 256) -> float:
  """Share of rows whose every target token is the argmax (greedy decoding's answer)."""
  hits = []
  for s in range(0, arrays["input_ids"].shape[0], batch):
    ids = jnp.asarray(arrays["input_ids"][s:s + batch])
    mask = jnp.asarray(arrays["attention_mask"][s:s + batch])
    scored = np.asarray(arrays["loss_mask"][s:s + batch][:, 1:]).astype(bool)
    pred = np.asarray(jnp.argmax(model(ids, mask)[:, :-1], -1))
    hits.append(np.all(~scored | (pred == np.asarray(ids)[:, 1:]), -1))
  return float(np.concatenate(hits).mean())


def run(config, workdir):
  table = []
  for cond in config.conditions:
    cond = ml_collections.ConfigDict(cond)
    name = f"n{cond.train_rows}_{cond.numbers}_d{cond.hidden_size}"
    train_pairs = sender_probe.sequences(cond.train_rows, config.seed)
    test_pairs = sender_probe.sequences(config.test_rows, config.seed + 10_000,
                                        exclude=frozenset(p for p, _ in train_pairs))
    tok = dsl_tokenizer.train_dsl_tokenizer([p + "\n" + t for p, t in train_pairs],
                                            config.vocab_size, os.path.join(workdir, name, "tok"),
                                            cond.numbers)
    c = ml_collections.ConfigDict(config.to_dict())
    c.model.overrides.hidden_size = cond.hidden_size
    c.model.overrides.intermediate_size = 3 * cond.hidden_size
    c.model.overrides.head_dim = cond.hidden_size // c.model.overrides.num_heads
    per_epoch = sft_batches.steps_per_epoch(cond.train_rows, c.train.batch)
    c.train.epochs = max(1, math.ceil(config.steps / per_epoch))
    arrays = _arrays(tok, train_pairs)
    model, _, rep = train.train_sft(arrays, tok, c, os.path.join(workdir, name), config.seed,
                                    tag=f"probe/{name}")
    row = {"condition": name, "train_rows": cond.train_rows, "numbers": cond.numbers,
           "hidden_size": cond.hidden_size, "steps": rep["steps"],
           "rows_seen": rep["steps"] * c.train.batch, "params": rep["params"],
           "test_exact_%": 100 * _exact(model, _arrays(tok, test_pairs)),
           "train_exact_%": 100 * _exact(model, _arrays(tok, train_pairs[:config.eval_rows])),
           "final_loss": rep["history"][-1][1] if rep["history"] else None,
           "train_wall_s": round(rep["wall_s"], 1)}
    logging.info("sender_probe %s: test exact %.1f%%", name, row["test_exact_%"])
    table.append(row)
  write_summary(workdir, {"test_rows": config.test_rows, "seed": config.seed}, table,
                title="GenCoord sender probe: need − holding from scratch",
                notes=f"Test: {config.test_rows} sequences, none a training prompt; teacher-forced "
                      "greedy exact match of `q=<n>` and EOS.", key=["condition"],
                debug=config.debug)
  return table
