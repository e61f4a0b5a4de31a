"""Token-DFA constraints in the jitted sampler (lib/generate/token_dfa.py +
lib/generate/sampling.py): outputs of a
random model match the regex / validate against the schema for every seed and temperature, a
FREE constraint changes nothing bit for bit, rows with different DFAs share one batch, and the
DFA export agrees with Python's `re` on which token sequences are allowed."""
import json
import re

import jax
import jsonschema
import numpy as np
import pytest
from flax import nnx

from lib import models
from lib.generate import sampling, token_dfa
from lib.models import model_setup, tokenizer

SCHEMA = {"type": "object", "required": ["name", "age", "kind"],
          "properties": {"name": {"type": "string", "maxLength": 6},
                         "age": {"type": "integer", "maxDigits": 3},  # outlines-core bound
                         "kind": {"enum": ["cat", "dog"]}, "ok": {"type": "boolean"},
                         "tags": {"type": "array", "items": {"enum": ["x", "y"]},
                                  "maxItems": 3}}}


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
  tok = tokenizer.train_tokenizer(model_setup.TINY_CORPUS, 384, tmp_path_factory.mktemp("tok"))
  model = models.build(models.preset("qwen3-tiny", vocab_size=len(tok)), rngs=nnx.Rngs(0))
  return model, tok, sampling.default_eos_ids(tok)


def _run(setup, dfas, key, temperature, max_new_tokens=96, **kw):
  model, tok, eos = setup
  prompts = [tok.encode(p) for p in ("Reply in JSON.", "a b c", "Hello there", "x")][:len(dfas)]
  ids, mask = sampling.left_pad(prompts, tok.pad_token_id)
  out = sampling.generate(*nnx.split(model), ids, mask, key, max_new_tokens=max_new_tokens,
                          temperature=temperature, eos_ids=eos, pad_id=tok.pad_token_id,
                          constraint=token_dfa.constraint(dfas, model.config.vocab_size), **kw)
  tokens, lengths = jax.device_get((out.tokens, out.lengths))
  rows = []
  for row in range(len(dfas)):
    t = tokens[row, :lengths[row]].tolist()
    rows.append((tok.decode([x for x in t if x not in eos]), bool(t) and t[-1] in eos))
  return rows, out


@pytest.mark.parametrize("temperature", [0.0, 0.8, 1.5])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_schema_outputs_always_parse_and_validate(setup, seed, temperature):
  _, tok, eos = setup
  dfa = token_dfa.compile_regex(tok, token_dfa.json_schema_regex(SCHEMA), eos)
  rows, _ = _run(setup, [dfa] * 4, jax.random.key(seed), temperature)
  for text, ended in rows:
    assert ended, text  # the DFA reached an accepting state and EOS closed the row
    jsonschema.validate(json.loads(text), SCHEMA)


def test_rows_with_different_dfas_and_free_rows_share_a_batch(setup):
  _, tok, eos = setup
  digits = token_dfa.compile_regex(tok, r"[0-9]{3}-[a-c]+", eos)
  choice = token_dfa.compile_regex(tok, r"(north|south|east|west)", eos)
  rows, _ = _run(setup, [digits, None, choice, digits], jax.random.key(3), 1.0, chunk_size=8)
  assert re.fullmatch(r"[0-9]{3}-[a-c]+", rows[0][0]) and rows[0][1]
  assert re.fullmatch(r"(north|south|east|west)", rows[2][0]) and rows[2][1]
  assert re.fullmatch(r"[0-9]{3}-[a-c]+", rows[3][0])
  assert not re.fullmatch(r"[0-9]{3}-[a-c]+", rows[1][0])  # the FREE row is not constrained


def test_free_constraint_is_bit_identical_to_no_constraint(setup):
  model, tok, eos = setup
  ids, mask = sampling.left_pad([tok.encode("a b c"), tok.encode("Hello there")],
                                tok.pad_token_id)
  for kw in (dict(temperature=0.0), dict(temperature=1.0, top_p=0.9, top_logprobs=3),
             dict(temperature=0.7, top_k=5, chunk_size=4)):
    args = (*nnx.split(model), ids, mask, jax.random.key(5))
    common = dict(max_new_tokens=24, eos_ids=eos, pad_id=tok.pad_token_id, **kw)
    plain = sampling.generate(*args, **common)
    free = sampling.generate(*args, constraint=token_dfa.constraint(
        [None, None], model.config.vocab_size), **common)
    for a, b in zip(plain, free):
      np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_log_probs_stay_those_of_the_raw_model(setup):
  _, tok, eos = setup
  dfa = token_dfa.compile_regex(tok, r"(yes|no)", eos)
  _, constrained = _run(setup, [dfa], jax.random.key(0), 0.0, top_logprobs=2)
  # Top alternatives come from the unmasked distribution, so they may be forbidden tokens; the
  # chosen token's log-prob is at most the top one.
  assert (np.asarray(constrained.logprobs[0, :1]) <=
          np.asarray(constrained.top_logprobs[0, :1, 0]) + 1e-6).all()


def test_table_agrees_with_python_re_on_token_paths(setup):
  _, tok, eos = setup
  pattern = r"(ab|cd)[0-9]{1,3}"
  dfa = token_dfa.compile_regex(tok, pattern, eos)
  by_id = token_dfa.token_bytes(tok)
  rng = np.random.default_rng(0)
  for _ in range(200):  # random walks over allowed tokens: every prefix stays a regex prefix
    state, text = dfa.initial, b""
    for _ in range(8):
      allowed = np.flatnonzero(dfa.row(state) >= 0)
      token = int(rng.choice(allowed))
      if token in eos:
        assert re.fullmatch(pattern, text.decode()), text
        break
      text += by_id[token]
      state = int(dfa.row(state)[token])
    assert dfa.accepting[state] == bool(re.fullmatch(pattern, text.decode()))


def test_stacked_table_holds_each_dfa_shifted_and_free_allows_everything(setup):
  _, tok, eos = setup
  a = token_dfa.compile_regex(tok, r"[0-9]{3}-[a-c]+", eos)
  b = token_dfa.compile_regex(tok, r"(north|south)", eos)
  assert len(a.table[0]) < len(tok) // 4  # identical token columns share a class
  vocab = len(tok) + 5  # a model vocabulary wider than the tokenizer's
  table, classes, starts = token_dfa.stack([b, None, a, b], vocab)
  dense = table[:, classes]
  assert (dense[token_dfa.FREE] == token_dfa.FREE).all()
  assert starts[1] == token_dfa.FREE and starts[0] == starts[3]
  for dfa, start in ((a, starts[2]), (b, starts[0])):
    offset = start - dfa.initial
    for s in range(dfa.table.shape[0]):
      row = dfa.row(s)
      np.testing.assert_array_equal(dense[offset + s, :len(tok)],
                                    np.where(row >= 0, row + offset, -1))
      assert (dense[offset + s, len(tok):] == -1).all()


def test_bad_patterns_and_oversized_tables_raise_one_clear_error(setup):
  _, tok, eos = setup
  with pytest.raises(token_dfa.ConstraintError, match="cannot compile"):
    token_dfa.compile_regex(tok, "(unclosed", eos)
  with pytest.raises(token_dfa.ConstraintError, match="over the limit of 200"):
    token_dfa.compile_regex(tok, "a{100}", eos, max_cells=200)
  with pytest.raises(token_dfa.ConstraintError, match="unsupported JSON schema"):
    token_dfa.json_schema_regex({"type": "no-such-type"})


def test_json_object_regex_nests_to_its_depth():
  pattern = token_dfa.json_object_regex(2)
  for text in ('{}', '{"a": 1}', '{"a":{"b":1},"c":[1, 2,"x"],"d":null}', '{"k":[]}'):
    assert re.fullmatch(pattern, text), text
  for text in ('{"a":{"b":{"c":1}}}', '[1]', '{"a":01}', '{"a":1,}'):
    assert not re.fullmatch(pattern, text), text
