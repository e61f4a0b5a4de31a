"""Decision-point probes that need a model (appendix C.1); the arithmetic is in agents/wm/probes.py.

  prediction_preference   log p(true next obs) - log p(mismatched next obs), both scored as the
                          assistant's reply to the world-model prompt with "<next_state>"
                          prefilled and "</next_state>" closing the span (nats, summed tokens)
  direct_distribution     CoT skipped: reasoning prefilled empty and "<action>" opened; softmax
                          over the summed log-probs of each admissible candidate + "</action>"
  sampled_distribution    full CoT: n sampled replies, empirical final-action distribution
                          (replies without an action form one failure category), CoT lengths
  overlap                 sum_a min(p(a), q(a)) between two conditions' distributions
  direct_distributions    every condition's direct distributions at the points (for the
                          pairwise overlaps of agents/wm/overlap.py)

Log-probabilities come from one jitted forward pass per (rows, bucketed length) batch; prompt and
continuation are tokenised separately and concatenated, so every candidate is scored on the same
prompt tokens.
"""
import dataclasses
from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from agents.wm import data, policy, probes
from agents.wm.prompts import agent_prompt, parse_action, parse_think
from lib.generate import sampling
from lib.models.chunked import chunked_token_logprobs
from lib.train.state import nnx_apply_fn

THINK_SKIPPED = "<think></think>\n<action>"


@dataclasses.dataclass
class DecisionPoint:
  """An agent state at which conditions are compared (list regime: `admissible` given)."""
  env: str
  task: str
  history: list[tuple[str, str | None]]
  obs: str
  steps_taken: int
  admissible: list[str]

  def messages(self) -> list[dict]:
    return [{"role": "user", "content": agent_prompt(self.env, self.task, self.history, self.obs,
                                                     self.steps_taken, self.admissible)}]


class Scorer:
  """Summed log-probabilities of continuations under one model."""

  def __init__(self, model, tok, batch: int = 16):
    self.tok, self.batch = tok, batch
    apply_fn, self.params = nnx_apply_fn(model)

    def logp(p, ids, mask):
      """[B, T-1] log p(ids[:, t] | ids[:, :t]), the head applied a chunk of positions at a
      time (lib/models/chunked.py): never [rows, T, V] float32 logits."""
      hidden, head_w = apply_fn(p, ids, mask, hidden=True)
      return chunked_token_logprobs(hidden[:, :-1], head_w, ids[:, 1:])[0]
    self._logp = jax.jit(logp)

  def continuation_logprobs(self, messages: Sequence[list[dict]], prefills: Sequence[str],
                            continuations: Sequence[str]) -> np.ndarray:
    """[N] sum over continuation tokens of log p(token | chat prompt + prefill + earlier)."""
    rows, spans = [], []
    for m, pre, cont in zip(messages, prefills, continuations, strict=True):
      prompt = policy.encode_chat(self.tok, m, prefill=pre)
      tail = self.tok.encode(cont, add_special_tokens=False)
      if not tail:
        raise ValueError("empty continuation")
      rows.append(prompt + tail)
      spans.append(len(tail))
    out = np.zeros(len(rows), np.float64)
    for lo in range(0, len(rows), self.batch):
      chunk = rows[lo:lo + self.batch]
      n = sampling.bucket_length(len(chunk), minimum=1)
      ids, mask = policy.pad_left(chunk + [chunk[0]] * (n - len(chunk)), self.tok.pad_token_id)
      logp = np.asarray(self._logp(self.params, jnp.asarray(ids), jnp.asarray(mask)))
      for i, span in enumerate(spans[lo:lo + self.batch]):
        out[lo + i] = logp[i, -span:].sum()     # left padding: the continuation ends each row
    return out


def prediction_preference(scorer: Scorer, samples: Sequence[data.WMSample],
                          mismatched: Sequence[str]) -> np.ndarray:
  """Per transition: log p(true next obs) - log p(mismatched next obs), <next_state> prefilled."""
  msgs = [data.prompt_messages(s) for s in samples]
  pre = [policy.OPEN] * len(samples)
  true = scorer.continuation_logprobs(msgs, pre, [s.next_obs + policy.CLOSE for s in samples])
  mis = scorer.continuation_logprobs(msgs, pre, [m + policy.CLOSE for m in mismatched])
  return probes.preference(true, mis)


def direct_distribution(scorer: Scorer, point: DecisionPoint) -> dict[str, float]:
  """Softmax over admissible candidates of log p(candidate + </action> | prompt, no CoT)."""
  if not point.admissible:
    raise ValueError("direct scoring needs the admissible actions of the decision point")
  n = len(point.admissible)
  lp = scorer.continuation_logprobs([point.messages()] * n, [THINK_SKIPPED] * n,
                                    [a + "</action>" for a in point.admissible])
  return probes.scored_distribution(dict(zip(point.admissible, lp.tolist())))


def sampled_distribution(model, tok, point: DecisionPoint, n: int, key: jax.Array,
                         max_new_tokens: int, temperature: float = 1.0) -> dict:
  """n CoT replies at `temperature` -> {"dist": final-action distribution, "reply_tokens": the
  completion tokens of each reply, "think_tokens": tokens inside <think> of each reply,
  "think_chars": mean characters inside <think>}."""
  replies = sampling.generate_text(model, tok, [point.messages()] * n, key,
                                   max_new_tokens=max_new_tokens, temperature=temperature)
  actions = [parse_action(r.text, point.admissible) for r in replies]
  thinks = [parse_think(r.text) for r in replies]
  return {"dist": probes.sampled_distribution(actions), "texts": [r.text for r in replies],
          "reply_tokens": [int(r.completion_tokens) for r in replies],
          "think_tokens": [len(tok.encode(t, add_special_tokens=False)) if t else 0
                           for t in thinks],
          "think_chars": float(np.mean([len(t) for t in thinks]))}


def direct_distributions(models: dict, points: Sequence[DecisionPoint]) -> dict[str, list]:
  """condition -> [direct-scoring action distribution at each point], for the pairwise overlaps
  of `agents.wm.overlap` (every pair of conditions, not only against a reference)."""
  out = {}
  for name, (model, tok) in models.items():
    scorer = Scorer(model, tok)
    out[name] = [direct_distribution(scorer, p) for p in points]
  return out


def probe_conditions(models: dict, points: Sequence[DecisionPoint],
                     samples: Sequence[data.WMSample], mismatched: Sequence[str], *,
                     n_samples: int, max_new_tokens: int, seed: int = 0,
                     reference: str = "BASE") -> list[dict]:
  """One row per condition: mean prediction preference, CoT length, and the mean overlap of its
  direct / sampled action distributions with the `reference` condition's at each point."""
  direct, sampled, rows = {}, {}, {}
  for name, (model, tok) in models.items():
    scorer = Scorer(model, tok)
    pref = prediction_preference(scorer, samples, mismatched) if samples else np.zeros(0)
    direct[name] = [direct_distribution(scorer, p) for p in points]
    outs = [sampled_distribution(model, tok, p, n_samples, jax.random.fold_in(
        jax.random.key(seed), i), max_new_tokens) for i, p in enumerate(points)]
    sampled[name] = [o["dist"] for o in outs]
    rows[name] = {"condition": name,
                  "pred_preference": float(pref.mean()) if pref.size else float("nan"),
                  "pref_positive_frac": float((pref > 0).mean()) if pref.size else float("nan"),
                  # CoT length over every sampled reply at every decision point
                  "cot_tokens": float(np.mean([x for o in outs for x in o["reply_tokens"]])),
                  "cot_tokens_median": float(np.median([x for o in outs
                                                        for x in o["reply_tokens"]])),
                  "think_tokens": float(np.mean([x for o in outs for x in o["think_tokens"]])),
                  "think_tokens_median": float(np.median([x for o in outs
                                                          for x in o["think_tokens"]])),
                  "think_chars": float(np.mean([o["think_chars"] for o in outs]))}
  if reference in models:
    for name in models:
      rows[name]["overlap_direct_vs_ref"] = float(np.mean(
          [probes.overlap(p, q) for p, q in zip(direct[name], direct[reference])]))
      rows[name]["overlap_sampled_vs_ref"] = float(np.mean(
          [probes.overlap(p, q) for p, q in zip(sampled[name], sampled[reference])]))
  return list(rows.values())
