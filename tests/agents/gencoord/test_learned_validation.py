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


def test_keep_best_restores_the_best_validations_params_even_after_a_resume(tok, tmp_path):
  """keep="best": the params of the validation with the highest cluster (then row) exact match
  are the kept model, the later of equals; a resumed run (a new rule object, the same files)
  keeps them, and keep="last" returns the final params."""
  vset = validation.build("direct_dsl", tok)
  vocab = len(tok)
  bad = tok.convert_tokens_to_ids("SITE_B")             # a binding id: some rows go wrong

  def apply_fn(params, input_ids, attention_mask, last=0):
    # params["good"] = 1: a perfect model; 0: wrong wherever the next token is `bad`
    perfect = _stand_in(-1, vocab)(None, input_ids, attention_mask, last)
    flawed = _stand_in(bad, vocab)(None, input_ids, attention_mask, last)
    return jnp.where(params["good"] > 0, perfect, flawed)

  path, best_dir = str(tmp_path / "validation.jsonl"), str(tmp_path / "best")
  kw = dict(every=10, min_steps=1000, stop_at=1.0, path=path, keep="best", best_dir=best_dir)
  rule = validation.EarlyStopping(vset, tok, **kw)
  validate = rule.bind(apply_fn)
  p = lambda good, tag: {"good": jnp.asarray(good), "tag": jnp.asarray(tag)}
  validate(10, p(0, 10))
  validate(20, p(1, 20))                # the best
  validate(30, p(0, 30))
  params, step = rule.kept_params(p(0, 99))
  assert step == 20 and int(params["tag"]) == 20 and int(params["good"]) == 1
  # Resumed: a new rule over the same files; an equal validation later wins (trained longer).
  again = validation.EarlyStopping(vset, tok, **kw)
  again.bind(apply_fn)(40, p(1, 40))
  assert again.kept_params(p(0, 99))[1] == 40
  assert int(again.kept_params(p(0, 99))[0]["tag"]) == 40
  last = validation.EarlyStopping(vset, tok, **{**kw, "keep": "last"})
  kept, step = last.kept_params(p(0, 99))
  assert step is None and int(kept["tag"]) == 99
  with pytest.raises(ValueError, match="keep"):
    validation.EarlyStopping(vset, tok, **{**kw, "keep": "first"})
