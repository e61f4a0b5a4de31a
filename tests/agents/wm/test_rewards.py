"""agents/wm/rewards.py: the audit's GT/MIS/COIN/PERM reward constructions."""
import collections

import jax
import numpy as np
import pytest

from agents.wm import rewards


def bag_of_letters(texts):
  """A deterministic toy embedder: letter counts."""
  out = np.zeros((len(texts), 26))
  for i, t in enumerate(texts):
    for ch in t.lower():
      if "a" <= ch <= "z":
        out[i, ord(ch) - 97] += 1
  return out


def test_extract_next_state_takes_last_complete_block():
  assert rewards.extract_next_state("<think>a</think><next_state> door open </next_state>") == \
      "door open"
  assert rewards.extract_next_state("<next_state>x</next_state> <next_state>y</next_state>") == "y"
  assert rewards.extract_next_state("<next_state>unterminated") is None
  assert rewards.extract_next_state("<next_state>  </next_state>") is None


def test_embedding_similarity_reward_matches_direct_cosine():
  preds = ["<next_state>you open the fridge</next_state>", "<next_state>zzz qqq</next_state>",
           "no tags at all", "<next_state>You open the fridge.</next_state>"]
  targets = ["You open the fridge", "You open the fridge", "You open the fridge", "the fridge"]
  calls = []
  emb = lambda xs: (calls.append(list(xs)), bag_of_letters(xs))[1]
  got = rewards.embedding_similarity_reward(preds, targets, emb, threshold=0.8)
  want = []
  for p, t in zip(preds, targets):
    e = rewards.extract_next_state(p)
    if e is None:
      want.append(0.0)
      continue
    a, b = bag_of_letters([e, t])
    want.append(float(a @ b / np.linalg.norm(a) / np.linalg.norm(b) > 0.8))
  assert got.tolist() == want
  assert want[:3] == [1.0, 0.0, 0.0]
  assert len(calls) == 1 and "no tags at all" not in calls[0]   # nothing embedded for misses


def test_embedding_similarity_threshold_is_strict():
  same = rewards.embedding_similarity_reward(["<next_state>ab</next_state>"], ["ab"],
                                             bag_of_letters, threshold=1.0)
  assert same.tolist() == [0.0]


@pytest.mark.parametrize("seed", range(5))
def test_mismatched_targets_is_text_derangement(seed):
  targets = [f"obs {i % 7}" for i in range(20)]   # duplicates on purpose
  out = rewards.mismatched_targets(targets, seed)
  assert collections.Counter(out) == collections.Counter(targets)
  assert all(a != b for a, b in zip(out, targets))
  assert out == rewards.mismatched_targets(targets, seed)   # deterministic


def test_mismatched_targets_heavy_duplicates_uses_fallback_and_impossible_raises():
  targets = ["a"] * 10 + [f"b{i}" for i in range(10)]   # random permutations almost never work
  out = rewards.mismatched_targets(targets, 0)
  assert collections.Counter(out) == collections.Counter(targets)
  assert all(a != b for a, b in zip(out, targets))
  with pytest.raises(ValueError, match="no text-level derangement"):
    rewards.mismatched_targets(["a", "a", "b"], 0)


def test_coin_reward_frequency_and_independence_of_key_reuse():
  r = np.asarray(rewards.coin_reward(jax.random.key(0), (200, 50), p=0.3))
  assert set(np.unique(r)) <= {0.0, 1.0}
  assert abs(r.mean() - 0.3) < 0.02       # 10k draws: sd ~ 0.0046
  assert np.array_equal(r, np.asarray(rewards.coin_reward(jax.random.key(0), (200, 50), p=0.3)))
  assert not np.array_equal(r, np.asarray(rewards.coin_reward(jax.random.key(1), (200, 50), 0.3)))


def test_model_embedder_with_tiny_qwen(tmp_path):
  from flax import nnx
  from lib import models
  from lib.models import tokenizer as tokenizer_lib
  texts = ["You open the fridge.", "The door is locked.", "Nothing happens."] * 4
  tok = tokenizer_lib.train_tokenizer(texts, 300, tmp_path / "tok")
  model = models.build(models.preset("qwen3-tiny", vocab_size=300), rngs=nnx.Rngs(0))
  embedder = rewards.model_embedder(model, tok)
  emb = embedder(texts[:3])
  np.testing.assert_allclose(np.linalg.norm(emb, axis=-1), 1.0, rtol=1e-5)
  # Same as calling lib.models.embed on the unpadded ids + <|endoftext|> directly.
  ids = tok(texts[1], add_special_tokens=False)["input_ids"] + [tok.pad_token_id]
  direct = models.embed(model, np.asarray([ids], np.int32))
  np.testing.assert_allclose(emb[1], np.asarray(direct)[0], rtol=1e-4, atol=1e-5)
  r = rewards.embedding_similarity_reward(
      ["<next_state>The door is locked.</next_state>"], ["The door is locked."], embedder)
  assert r.tolist() == [1.0]
