"""Model-based decision-point probes: log-probs against transformers, preference, overlaps."""
import numpy as np
import pytest
import torch
import transformers
from flax import nnx

import jax
from agents.wm import data, overlap, policy, probes, probes_model
from agents.wm.prompts import parse_think
from lib import models
from lib.models import tokenizer as tokenizer_lib

OBS = ["You are in the kitchen. A fridge is here.", "The fridge is open. It holds an egg.",
       "You pick up the egg.", "Nothing happens."]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
  path = tmp_path_factory.mktemp("tiny")
  texts = [f"{o} <think> </think> <next_state> </next_state> <action> take egg </action>"
           for o in OBS] * 4
  tok = tokenizer_lib.train_tokenizer(texts, 320, str(path))
  config = models.preset("qwen3-tiny", vocab_size=len(tok), pad_token_id=tok.pad_token_id,
                         eos_token_ids=(tok.convert_tokens_to_ids(tokenizer_lib.IM_END),))
  model = models.build(config, rngs=nnx.Rngs(3))
  models.save_pretrained(model, config, path)
  return model, tok, path


def _samples():
  return [data.WMSample("alfworld", "t", "find an egg", [], OBS[i], f"act {i}", OBS[i + 1])
          for i in range(3)]


def test_continuation_logprobs_match_transformers(tiny):
  model, tok, path = tiny
  scorer = probes_model.Scorer(model, tok, batch=2)   # 3 rows: two chunks, padded rows
  msgs = [data.prompt_messages(s) for s in _samples()]
  conts = ["The fridge is open.</next_state>", "Nothing happens.</next_state>", "egg"]
  ours = scorer.continuation_logprobs(msgs, [policy.OPEN] * 3, conts)
  hf = transformers.AutoModelForCausalLM.from_pretrained(path).eval()
  for m, cont, got in zip(msgs, conts, ours):
    prompt = policy.encode_chat(tok, m, prefill=policy.OPEN)
    tail = tok.encode(cont, add_special_tokens=False)
    with torch.no_grad():
      logits = hf(torch.tensor([prompt + tail])).logits[0].double()
    logp = torch.log_softmax(logits, -1)
    want = sum(float(logp[len(prompt) + j - 1, t]) for j, t in enumerate(tail))
    assert got == pytest.approx(want, abs=2e-3)


def test_preference_sign_follows_the_model(tiny):
  model, tok, _ = tiny
  scorer = probes_model.Scorer(model, tok)
  samples = _samples()
  mis = [samples[(i + 1) % 3].next_obs for i in range(3)]
  pref = probes_model.prediction_preference(scorer, samples, mis)
  msgs = [data.prompt_messages(s) for s in samples]
  true = scorer.continuation_logprobs(msgs, [policy.OPEN] * 3,
                                      [s.next_obs + policy.CLOSE for s in samples])
  np.testing.assert_allclose(pref, true - scorer.continuation_logprobs(
      msgs, [policy.OPEN] * 3, [m + policy.CLOSE for m in mis]))
  # the true target against itself prefers nothing
  same = probes_model.prediction_preference(scorer, samples, [s.next_obs for s in samples])
  np.testing.assert_allclose(same, 0.0, atol=1e-9)


def test_direct_and_sampled_distributions_and_overlap(tiny):
  model, tok, _ = tiny
  point = probes_model.DecisionPoint("alfworld", "find an egg", [], OBS[0], 0,
                                     ["open fridge 1", "go to sinkbasin 1", "look"])
  scorer = probes_model.Scorer(model, tok)
  p = probes_model.direct_distribution(scorer, point)
  assert set(p) == set(point.admissible) and sum(p.values()) == pytest.approx(1.0)
  lp = scorer.continuation_logprobs([point.messages()] * 3, [probes_model.THINK_SKIPPED] * 3,
                                    [a + "</action>" for a in point.admissible])
  soft = np.exp(lp - lp.max()) / np.exp(lp - lp.max()).sum()
  np.testing.assert_allclose([p[a] for a in point.admissible], soft, rtol=1e-6)
  s = probes_model.sampled_distribution(model, tok, point, 4, jax.random.key(0), 8)
  assert sum(s["dist"].values()) == pytest.approx(1.0)
  assert len(s["reply_tokens"]) == 4 and all(0 < n <= 8 for n in s["reply_tokens"])
  # think length: tokens of the text inside <think>...</think>, 0 when there is none
  assert s["think_tokens"] == [len(tok.encode(parse_think(t), add_special_tokens=False))
                               for t in s["texts"]]
  assert probes.FAILURE in s["dist"]    # a random model does not close an <action> in 8 tokens
  rows = probes_model.probe_conditions({"BASE": (model, tok), "COPY": (model, tok)}, [point],
                                       _samples(), [OBS[0]] * 3, n_samples=2, max_new_tokens=4)
  assert [r["condition"] for r in rows] == ["BASE", "COPY"]
  for r in rows:   # a condition overlaps fully with an identical model
    assert r["overlap_direct_vs_ref"] == pytest.approx(1.0)
    assert r["overlap_sampled_vs_ref"] == pytest.approx(1.0)


def test_direct_distributions_feed_pairwise_overlap(tiny):
  model, tok, _ = tiny
  config = models.preset("qwen3-tiny", vocab_size=len(tok), pad_token_id=tok.pad_token_id,
                         eos_token_ids=(tok.convert_tokens_to_ids(tokenizer_lib.IM_END),))
  other = models.build(config, rngs=nnx.Rngs(11))
  points = [probes_model.DecisionPoint("alfworld", "find an egg", [], OBS[i], i,
                                       ["open fridge 1", "go to sinkbasin 1", "look"])
            for i in range(2)]
  d = probes_model.direct_distributions({"BASE": (model, tok), "OTHER": (other, tok)}, points)
  assert [set(p) for p in d["OTHER"]] == [set(points[0].admissible)] * 2
  assert all(sum(p.values()) == pytest.approx(1.0) for p in d["BASE"] + d["OTHER"])
  (row,) = overlap.pairwise(overlap.direct_as_dists(d), "direct", n_resamples=100)
  want = np.mean([probes.overlap(p, q) for p, q in zip(d["BASE"], d["OTHER"])])
  assert row["overlap"] == pytest.approx(want) and 0.0 < want < 1.0   # different weights
  assert (row["a"], row["b"], row["group"], row["points"]) == ("BASE", "OTHER", "BASE–trained", 2)
