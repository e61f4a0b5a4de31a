"""Reward constructions of the world-model audit (GT / MIS / COIN / *-PERM conditions).

GT   : embedding_similarity_reward(preds, true next observations, embedder)
MIS  : embedding_similarity_reward(preds, mismatched_targets(true targets, seed), embedder)
COIN : coin_reward(key, shape) — Bernoulli(p), independent of prompt, response and environment
PERM : scores permuted within each group (`lib.rl.losses.permute_within_group`) before computing
       advantages (scores kept, link broken)
"""
import re
from typing import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from lib import models

_NEXT_STATE = re.compile(r"<next_state>(.*?)</next_state>", re.DOTALL)


def extract_next_state(text: str) -> str | None:
  """The stripped content of the last complete <next_state>...</next_state> block, or None when
  there is none or it is empty (the last block is the final answer when reasoning quotes tags).

  Args:
    text: one raw model response.
  Returns:
    the predicted next state (str), or None.
  """
  blocks = _NEXT_STATE.findall(text)
  if not blocks:
    return None
  content = blocks[-1].strip()
  return content or None


def embedding_similarity_reward(preds: Sequence[str], targets: Sequence[str],
                                embedder: Callable[[list[str]], np.ndarray],
                                threshold: float = 0.8) -> np.ndarray:
  """Binary reward 1[cos(embed(pred), embed(target)) > threshold].

  Args:
    preds: N raw model responses; the prediction is read from <next_state>...</next_state>.
      A response without an extractable prediction gets reward 0 and is not embedded.
    targets: N target observations (plain text).
    embedder: list of N' strings -> [N', D] array of embeddings (need not be normalised).
    threshold: strict cosine-similarity threshold (the audit uses 0.8 with Qwen3-Embedding).
  Returns:
    [N] float32 array of 0/1 rewards.
  """
  if len(preds) != len(targets):
    raise ValueError(f"{len(preds)} predictions but {len(targets)} targets")
  rewards = np.zeros(len(preds), np.float32)
  extracted = [extract_next_state(p) for p in preds]
  keep = [i for i, e in enumerate(extracted) if e is not None]
  if not keep:
    return rewards
  texts = [extracted[i] for i in keep] + [targets[i] for i in keep]
  emb = np.asarray(embedder(texts), np.float64)
  if emb.shape[0] != len(texts):
    raise ValueError(f"embedder returned {emb.shape[0]} rows for {len(texts)} texts")
  emb = emb / np.maximum(np.linalg.norm(emb, axis=-1, keepdims=True), 1e-12)
  cos = (emb[:len(keep)] * emb[len(keep):]).sum(-1)
  rewards[keep] = (cos > threshold).astype(np.float32)
  return rewards


def model_embedder(model, tokenizer, max_length: int = 512,
                   append_eos: bool = True) -> Callable[[list[str]], np.ndarray]:
  """An `embedder` for `embedding_similarity_reward` from a lib.models Qwen (e.g. Qwen3-Embedding
  loaded with `lib.models.load_pretrained`): last-token pooled, L2-normalised (`lib.models.embed`).

  Qwen3-Embedding pools the hidden state of a trailing <|endoftext|>; with `append_eos` that token
  (the tokenizer's pad token) is appended when the text does not already end with it. Texts are
  cut to `max_length - 1` tokens (before that EOS) and left-padded to a power-of-two length
  (at least 16) so few shapes compile.

  Args:
    model: a lib.models model with `hidden_states` (what `lib.models.embed` calls).
    tokenizer: its Hugging Face tokenizer; `pad_token_id` is the appended EOS and the padding id.
    max_length: most tokens per text, counting the appended EOS.
    append_eos: append the pad token to texts that do not end with it.
  Returns:
    embedder(texts: list[str]) -> [N, D] float32 np.ndarray of unit vectors (jitted per width).
  """
  eos = tokenizer.pad_token_id
  embed = jax.jit(lambda ids, mask: models.embed(model, ids, mask))

  def embedder(texts: list[str]) -> np.ndarray:
    rows = [tokenizer(t, add_special_tokens=False)["input_ids"][:max_length - 1] for t in texts]
    if append_eos and eos is not None:
      rows = [r if r and r[-1] == eos else r + [eos] for r in rows]
    width = max(16, 1 << (max(len(r) for r in rows) - 1).bit_length())
    ids = np.full((len(rows), width), eos or 0, np.int32)
    mask = np.zeros((len(rows), width), np.int32)
    for i, r in enumerate(rows):
      ids[i, width - len(r):], mask[i, width - len(r):] = r, 1
    return np.asarray(embed(jnp.asarray(ids), jnp.asarray(mask)))

  return embedder


def mismatched_targets(targets: Sequence[str], seed: int) -> list[str]:
  """A text-level derangement of `targets`: out[i] != targets[i] for every i (as strings, so a
  duplicate of the own target never counts as mismatched) and sorted(out) == sorted(targets).

  Tries seeded random permutations first; when duplicates make those unlikely to succeed it
  falls back to the classic construction (group equal texts, shift by the largest group).
  Raises ValueError when no such derangement exists (one text fills more than half the list).

  Args:
    targets: N target texts.
    seed: seed of the `np.random.default_rng` that draws the permutation.
  Returns:
    list of N strings, a permutation of `targets` with out[i] != targets[i].
  """
  targets = list(targets)
  n = len(targets)
  counts: dict[str, int] = {}
  for t in targets:
    counts[t] = counts.get(t, 0) + 1
  if n == 0:
    return []
  biggest = max(counts.values())
  if 2 * biggest > n:
    raise ValueError(f"no text-level derangement exists: one target occurs {biggest} times "
                     f"among {n}")
  rng = np.random.default_rng(seed)
  for _ in range(64):
    perm = rng.permutation(n)
    if all(targets[perm[i]] != targets[i] for i in range(n)):
      return [targets[j] for j in perm]
  # Sort positions so equal texts are contiguous (groups in random order), then give each
  # position the text `biggest` places further on: no group is longer than the shift.
  group_rank = {t: r for r, t in enumerate(rng.permutation(sorted(counts)))}
  order = sorted(rng.permutation(n), key=lambda i: group_rank[targets[i]])
  out = [""] * n
  for k, i in enumerate(order):
    out[i] = targets[order[(k + biggest) % n]]
  return out


def coin_reward(key: jax.Array, shape: tuple[int, ...], p: float = 0.5) -> jax.Array:
  """Independent Bernoulli(p) rewards, the zero-information COIN control.

  Args:
    key: PRNG key.
    shape: output shape, e.g. (B, G).
    p: probability of reward 1.
  Returns:
    `shape` float32 array of 0/1.
  """
  return jax.random.bernoulli(key, p, shape).astype(jnp.float32)
