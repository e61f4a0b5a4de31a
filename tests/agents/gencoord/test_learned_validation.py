"""agents/gencoord/learned/validation.py and the DSL tokenizer's codebook-id pieces.

The scorer is checked against a stand-in model whose predictions are known exactly: it predicts
every next token right except the tokens of one binding id, so the rows that are not exact, the
position of their first wrong token and the field it names are all computable by hand.
"""
import jax.numpy as jnp
import numpy as np
import pytest

from agents.gencoord import data, suites
from agents.gencoord.learned import chat, tokenizer as dsl_tokenizer
from agents.gencoord.learned import training_recipes, validation


@pytest.fixture(scope="module")
def tok(tmp_path_factory):
  rows = training_recipes.get("direct_dsl").rows()[::4]
  return dsl_tokenizer.train_dsl_tokenizer(
      [chat.system_prompt() + "\n" + r.prompt + "\n" + r.target for r in rows], 1024,
      tmp_path_factory.mktemp("tok"))


def _stand_in(bad_id: int, vocab: int):
  """apply_fn that predicts every next token, except that `bad_id` is predicted as another."""
  def apply_fn(params, input_ids, attention_mask, last=0):
    del params, attention_mask
    nxt = jnp.concatenate([input_ids[:, 1:], input_ids[:, -1:]], axis=1)
    nxt = jnp.where(nxt == bad_id, (bad_id + 1) % vocab, nxt)
    logits = jnp.eye(vocab)[nxt]
    return logits[:, -last:] if last else logits
  return apply_fn


def test_a_binding_id_is_one_token_wherever_it_occurs(tok):
  ep = next(e for e in suites.suite("intervention")
            if e.template == "build_site" and e.binding == "SITE_B")
  send, recv = data.forward_rows([ep])
  site_b = tok.encode("SITE_B", add_special_tokens=False)
  assert len(site_b) == 1
  prompt = tok.encode(send.prompt, add_special_tokens=False)
  # observation, codebook, structure header lines, the R0 `bind=` of its branch
  assert prompt.count(site_b[0]) >= 4
  assert site_b[0] in tok.encode(recv.target, add_special_tokens=False)
  assert site_b[0] in tok.encode(recv.prompt, add_special_tokens=False)   # incoming request


def test_scorer_finds_exactly_the_rows_with_the_wrong_token_and_names_the_field(tok):
  vset = validation.build("direct_dsl", tok)
  assert len(vset.rows) == 640                       # 160 clusters x 2 views x 2 stages
  bad = tok.convert_tokens_to_ids("SITE_B")
  exact, first = validation.make_scorer(_stand_in(bad, len(tok)), vset, batch=48)(None)
  expect_wrong = np.array([bad in t for t in vset.target_ids])
  np.testing.assert_array_equal(~exact, expect_wrong)
  for i in np.flatnonzero(expect_wrong):
    assert first[i] == vset.target_ids[i].index(bad)
  assert (first[exact] == -1).all()
  summary = validation.summarize(vset, exact, first, tok)
  assert summary["per_binding"]["build_site/SITE_B"] == 0.0
  assert all(v == 1.0 for k, v in summary["per_binding"].items() if k != "build_site/SITE_B")
  assert summary["cluster_exact"] == pytest.approx(150 / 160)
  assert summary["errors"] == {
      "build_site/SITE_B/sender_initial/r0": {"REQ:bind": 10},
      "build_site/SITE_B/sender_initial/r1": {"REQ:bind": 10},
      "build_site/SITE_B/receiver_after_request/r0": {"SELF:bind": 10},
      "build_site/SITE_B/receiver_after_request/r1": {"SELF:bind": 10}}


def test_a_perfect_model_is_exact_everywhere_and_held_out_is_refused(tok):
  vset = validation.build("direct_dsl", tok)
  exact, first = validation.make_scorer(_stand_in(-1, len(tok)), vset)(None)
  assert exact.all() and (first == -1).all()
  assert validation.summarize(vset, exact, first, tok)["cluster_exact"] == 1.0
  with pytest.raises(ValueError, match="held-out"):
    validation.build("direct_dsl", tok, "heldout")


def test_early_stopping_rule_and_its_log(tok, tmp_path):
  vset = validation.build("direct_dsl", tok)
  path = str(tmp_path / "validation.jsonl")
  rule = validation.EarlyStopping(vset, tok, every=10, min_steps=20, stop_at=1.0, path=path)
  validate = rule.bind(_stand_in(-1, len(tok)))
  assert validate(10, None)[1] is False                # perfect, but before min_steps
  scalars, stop = validate(20, None)
  assert stop and scalars == {"row_exact": 1.0, "cluster_exact": 1.0}
  validate(20, None)                                   # a resumed run re-validates step 20
  assert [r["step"] for r in validation.history(path)] == [10, 20]
  assert validation.history(str(tmp_path / "none.jsonl")) == []
