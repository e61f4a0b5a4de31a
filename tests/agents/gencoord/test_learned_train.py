"""SFT of a tiny commitment model: the loss falls, an interrupted run resumes exactly, and a
short-context drill interleaves with the full rows."""
import shutil

import jax
import ml_collections
import numpy as np
import pytest
from flax import nnx

from agents.gencoord.learned import chat, drill, tokenizer as dsl_tokenizer, train
from agents.gencoord.learned import training_recipes as recipes
from lib.run.config_blocks import model_block
from lib.sft import batches as sft_batches, chat_rows


def _config(epochs=4, accum_steps=1):
  c = ml_collections.ConfigDict()
  c.model = model_block(preset="qwen3-tiny", overrides=dict(
      hidden_size=32, num_layers=1, num_heads=2, num_kv_heads=1, head_dim=16,
      intermediate_size=64, tie_word_embeddings=True, max_position_embeddings=4096))
  c.train = dict(epochs=epochs, batch=8, lr=1e-2, warmup_frac=0.0, schedule="cosine",
                 decay_frac=0.2, weight_decay=0.01,
                 clip_norm=1.0, log_every=1, ckpt_every=4, accum_steps=accum_steps)
  return c


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
  rows = recipes.get("direct_dsl").rows()[:16]
  tok = dsl_tokenizer.train_dsl_tokenizer(
      [chat.system_prompt() + r.prompt + r.target for r in rows], 400,
      tmp_path_factory.mktemp("tok"))
  examples = chat_rows.encode_rows(tok, chat.sft_pairs(rows, "dsl"))
  return tok, sft_batches.left_padded(examples, tok.pad_token_id or 0)


def _params(model):
  return jax.tree.leaves(nnx.state(model, nnx.Param))


def test_loss_falls_and_resume_is_exact(setup, tmp_path):
  tok, arrays = setup
  model, mcfg, rep = train.train_sft(arrays, tok, _config(), str(tmp_path / "a"), seed=0)
  assert rep["steps"] == 8 and len(rep["history"]) == 8 and rep["resumed_from"] == 0
  assert rep["history"][-1][1] < 0.8 * rep["history"][0][1]
  assert rep["train_tokens"] == int(arrays["attention_mask"].sum()) * 4   # 16 rows, 4 epochs
  assert mcfg.vocab_size == len(tok) and mcfg.eos_token_ids == (tok.eos_token_id,)
  # Interrupt: drop the final checkpoint, rerun -> resumes at step 4 and ends identical.
  shutil.copytree(tmp_path / "a", tmp_path / "b")
  shutil.rmtree(tmp_path / "b" / "ckpt" / "8")
  model_b, _, rep_b = train.train_sft(arrays, tok, _config(), str(tmp_path / "b"), seed=0)
  assert rep_b["resumed_from"] == 4 and rep_b["history"] == rep["history"]
  for a, b in zip(_params(model), _params(model_b)):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)


def test_micro_batches_give_the_whole_batch_update(setup, tmp_path):
  """train.accum_steps (the paper's micro 4 x accumulation 4) splits each batch of 8 into
  micro-batches; the update is the whole batch's, so the trained weights agree."""
  tok, arrays = setup
  whole, _, rep = train.train_sft(arrays, tok, _config(2), str(tmp_path / "one"), seed=0)
  micro, _, rep_m = train.train_sft(arrays, tok, _config(2, accum_steps=4), str(tmp_path / "four"),
                                    seed=0)
  assert rep["steps"] == rep_m["steps"] == 4
  np.testing.assert_allclose([l for _, l in rep_m["history"]], [l for _, l in rep["history"]],
                             rtol=1e-5)
  for a, b in zip(_params(whole), _params(micro)):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-5)


def test_training_interleaves_full_and_drill_batches(setup, tmp_path):
  """train_sft(drill=...): a short-context drill batch after every full batch (twice the steps),
  every token of both streams counted."""
  tok, arrays = setup
  drows = drill.drill_rows(4)[:40]
  darr = sft_batches.left_padded(chat_rows.encode_rows(tok, drill.drill_pairs(drows)),
                                 tok.pad_token_id or 0)
  assert darr["input_ids"].shape[1] < 0.6 * arrays["input_ids"].shape[1]   # no system, structure
  cfg = _config(epochs=2)
  cfg.train.drill = dict(clusters_per_template=4, batch=20)
  _, _, rep = train.train_sft(arrays, tok, cfg, str(tmp_path / "run"), seed=0, drill=darr)
  # 2 full batches per epoch x 2 epochs, each followed by one drill batch of 20
  assert rep["steps"] == rep["budget_steps"] == 8 and rep["epochs"] == 2
  assert rep["drill_rows"] == 40
  want = 2 * int(arrays["attention_mask"].sum()) + sum(
      int(sft_batches.epoch_batches(darr, 20, 0)(k)["attention_mask"].sum()) for k in range(4))
  assert rep["train_tokens"] == want
  assert np.isfinite(rep["history"][-1][1])


def test_a_drill_lead_comes_first_and_adds_its_steps(setup, tmp_path):
  """train.drill.lead_epochs: that many epochs of drill batches alone, then the interleaved
  recipe; the lead's steps are added to the budget, and `epochs` counts the full rows only."""
  tok, arrays = setup
  drows = drill.drill_rows(4)[:40]
  darr = sft_batches.left_padded(chat_rows.encode_rows(tok, drill.drill_pairs(drows)),
                                 tok.pad_token_id or 0)
  cfg = _config(epochs=2)
  cfg.train.drill = dict(clusters_per_template=4, batch=20, lead_epochs=1.5)
  assert train.drill_lead_steps(darr, cfg.train) == 3          # 2 drill batches an epoch
  assert train.drill_lead_steps(None, cfg.train) == 0
  _, _, rep = train.train_sft(arrays, tok, cfg, str(tmp_path / "run"), seed=0, drill=darr)
  assert rep["steps"] == rep["budget_steps"] == 8 + 3 and rep["drill_lead_steps"] == 3
  assert rep["epochs"] == 2
  # tokens: the 7 drill batches 0..6 (3 in the lead, 4 interleaved) and 2 epochs of full rows
  want = 2 * int(arrays["attention_mask"].sum()) + sum(
      int(sft_batches.epoch_batches(darr, 20, 0)(k)["attention_mask"].sum()) for k in range(7))
  assert rep["train_tokens"] == want


class _KeepStep:
  """A validation rule that keeps the params it saw at `step` (the interface of
  agents.gencoord.learned.validation.EarlyStopping that train_sft uses)."""

  def __init__(self, step):
    self.every, self.step, self.seen = 2, step, {}

  def bind(self, apply_fn):
    del apply_fn
    def validate(step, params):
      self.seen[step] = jax.tree.map(np.asarray, params)
      return {}, False
    return validate

  def kept_params(self, params):
    del params
    return self.seen[self.step], self.step


def test_the_model_returned_is_the_one_the_validation_rule_keeps(setup, tmp_path):
  tok, arrays = setup
  rule = _KeepStep(4)
  model, _, rep = train.train_sft(arrays, tok, _config(), str(tmp_path / "run"), seed=0,
                                  early_stopping=rule)
  assert sorted(rule.seen) == [2, 4, 6, 8] and rep["steps"] == 8 and rep["kept_step"] == 4
  kept = jax.tree.leaves(rule.seen[4])
  final = jax.tree.leaves(rule.seen[8])
  assert any(not np.allclose(a, b) for a, b in zip(kept, final))
  for a, b in zip(_params(model), kept):
    np.testing.assert_array_equal(np.asarray(a), b)
