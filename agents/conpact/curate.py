"""ConPAct-S/R training data from logged ConPAct trajectories (results rows of conpact/eval).

An example is {"messages": context, "target": reply, "role", "source"}: the loss is applied to
`target` only; everything before it -- including a conflicting earlier reply in a discussion --
is context. Which replies may be targets is the recipe's call (`agents.conpact.recipes`:
ConPAct-S keeps valid replies, ConPAct-R validated ones without hypothetical errors or
non-optimal actions, paper Table 8); this module applies the consistency rule both share.

Components (paper Fig. 6a / Table 20 ablations; No Sup. and No Replay keep consistency filtering):
  consistency filtering     targets come only from consistent segments: the planner call and the
                            actor calls of a sub-goal whose initial check was comparable (both
                            roles stated a field) and found no contradiction (and, with
                            `success_only`, from successful rollouts)
  reconciliation supervision  the final-round discussion replies of repaired checks, in their
                            discussion context (original prompt, the conflicting reply, feedback)
  reconciliation replay     the same repaired replies replayed at the original decision point,
                            without the conflict turn, so the consistent reading is learned as the
                            first answer

Our reading where the paper leaves details open: a segment is the calls from a planner call to
the next one; a segment whose check was contradicted contributes no initial reply (its later
actor calls included), only its successful correction; replay re-uses the original prompt.
Every candidate reply left out is counted by reason (`recipes.REASONS`).

Token budgets (paper Table 7: "3 epochs of ReAct SFT; token-matched across methods") count TARGET
tokens (reply + EOS, as `sft_batch` keeps them): `match_budget` takes shuffled passes over the
examples until the next would exceed the budget, so a matched run ends within one example of it.
"""
import collections
import dataclasses
from typing import Callable

import numpy as np

from agents.conpact import metrics, recipes, schemas
from lib.sft import chat_rows


@dataclasses.dataclass(frozen=True)
class CurateConfig:
  recipe: str = "conpact_r"  # conpact_s | conpact_r (agents/conpact/recipes.py)
  consistency_filtering: bool = True
  reconciliation_supervision: bool = True
  reconciliation_replay: bool = True
  success_only: bool = True

  def __post_init__(self):
    recipes.get(self.recipe)  # one line listing the valid names on a typo


@dataclasses.dataclass
class Curation:
  """Curated examples and, per role, the candidate replies left out by reason."""
  examples: list
  excluded: dict  # role -> {reason: count}


def _example(call: dict, role: str, source: str, messages=None) -> dict:
  return {"messages": list(messages if messages is not None else call["messages"]),
          "target": call["text"], "role": role, "source": source}


def _segments(calls: list[dict]) -> list[list[int]]:
  """Call indices grouped from one planner call to the next (discussion calls included)."""
  out = []
  for i, c in enumerate(calls):
    if c["tag"] == "planner" or not out:
      out.append([])
    out[-1].append(i)
  return out


def _segment_state(check: dict | None) -> str:
  if check is None:
    return "no_check"
  if check["conflicts"]:
    return "inconsistent_segment"
  return "consistent" if metrics.is_comparable(check) else "not_comparable"


def curate_row(row: dict, schema: schemas.Schema, action_names, cfg: CurateConfig,
               excluded: collections.Counter | None = None) -> list[dict]:
  """Examples of one results row; `excluded[(role, reason)]` counts the replies left out."""
  excluded = collections.Counter() if excluded is None else excluded
  recipe, env = recipes.get(cfg.recipe), row["env"]
  # Record call indices count every request of the episode, failed ones included.
  calls = [e for e in row["transcript"] if e["type"] == "call"]
  records = metrics.records(row)
  checks = {r["calls"]["planner"]: r for r in records if r["kind"] == "pair"}
  truth_of = {}  # call index -> ground truth of the frame that call saw
  for r in records:
    for i in (r.get("calls") or {}).values():
      truth_of[i] = r["truth"]
  if cfg.success_only and not row["success"]:
    for c in calls:
      excluded[(recipes.role_of(c["tag"]), "unsuccessful_rollout")] += 1
    return []

  def judge(i: int, truth, asserting: bool) -> str | None:
    call = calls[i]
    if call.get("error") is not None:
      return "call_error"
    return recipes.problem(recipes.Candidate(call, call["tag"], truth, asserting), env, schema,
                           action_names, recipe)

  out = []
  for seg in _segments(calls):
    check = checks.get(seg[0])
    state = _segment_state(check)
    initial = [i for i in seg if calls[i]["tag"] in ("planner", "actor")]
    for i in initial:
      role = recipes.role_of(calls[i]["tag"])
      if state != "consistent" and cfg.consistency_filtering:
        excluded[(role, state)] += 1
        continue
      why = judge(i, truth_of.get(i), i in truth_of)
      if why:
        excluded[(role, why)] += 1
      else:
        source = "consistent" if state == "consistent" else "unfiltered"
        out.append(_example(calls[i], role, source))
    d = check.get("discussion") if check else None
    if not d:
      continue
    last = d["rounds"][-1] if d["repaired"] and d["rounds"] else {}
    final = {last.get(k) for k in ("planner_call", "actor_call")} - {None}
    for i in seg:
      tag = calls[i]["tag"]
      if tag in ("planner", "actor"):
        continue
      role = recipes.role_of(tag)
      if not d["repaired"]:
        excluded[(role, "unrepaired_discussion")] += 1
        continue
      if i not in final:
        excluded[(role, "superseded_round")] += 1
        continue
      why = judge(i, check["truth"], True)
      if why:
        excluded[(role, why)] += 1
        continue
      if cfg.reconciliation_supervision:
        out.append(_example(calls[i], role, "reconciliation"))
      if cfg.reconciliation_replay:
        original = calls[check["calls"][role]]
        out.append(_example(calls[i], role, "replay", messages=original["messages"]))
  return out


def curation(rows, schema: schemas.Schema, action_names, cfg: CurateConfig = CurateConfig()
             ) -> Curation:
  excluded = collections.Counter()
  examples = [ex for row in rows for ex in curate_row(row, schema, action_names, cfg, excluded)]
  by_role = {}
  for (role, reason), n in sorted(excluded.items()):
    by_role.setdefault(role, {})[reason] = n
  return Curation(examples, by_role)


def curate(rows, schema: schemas.Schema, action_names, cfg: CurateConfig = CurateConfig()):
  """The examples of `curation` (see there for the exclusion counts)."""
  return curation(rows, schema, action_names, cfg).examples


def match_budget(examples: list[dict], budget: int, count: Callable[[dict], int],
                 seed: int = 0) -> list[dict]:
  """Shuffled passes over `examples` (a fresh permutation per pass) until adding the next example
  would exceed `budget` tokens; `count(example)` is an example's token count."""
  if not examples:
    return []
  rng = np.random.default_rng(seed)
  out, used = [], 0
  while True:
    for i in rng.permutation(len(examples)):
      n = count(examples[i])
      if used + n > budget:
        return out
      out.append(examples[i])
      used += n


def tokenize(example: dict, tokenizer) -> tuple[list[int], list[int]]:
  """(input ids, loss mask) for one example: chat-rendered context, then target + EOS (masked in),
  as `lib.sft.chat_rows.encode_row` encodes it."""
  prompt, target = chat_rows.encode_row(tokenizer, example["messages"], example["target"])
  return prompt + target, [0] * len(prompt) + [1] * len(target)


def sft_batch(examples: list[dict], tokenizer, max_len: int) -> dict:
  """lib/sft/step.py's batch layout (right-padded); rows longer than max_len keep their LAST tokens
  so
  the target survives truncation."""
  ids = np.full((len(examples), max_len), tokenizer.pad_token_id, np.int32)
  attn = np.zeros((len(examples), max_len), np.int32)
  mask = np.zeros((len(examples), max_len), np.int32)
  for r, ex in enumerate(examples):
    x, m = tokenize(ex, tokenizer)
    x, m = x[-max_len:], m[-max_len:]
    ids[r, :len(x)], attn[r, :len(x)], mask[r, :len(m)] = x, 1, m
  return {"input_ids": ids, "attention_mask": attn, "loss_mask": mask}


def target_tokens(example: dict, tokenizer, max_len: int) -> int:
  """Loss tokens of one example in an `sft_batch` of `max_len`: target + EOS, the last `max_len`
  of them when the target alone is longer."""
  return min(len(tokenizer(example["target"], add_special_tokens=False)["input_ids"]) + 1, max_len)


def reference_budget(reference: list[dict], count: Callable[[dict], int], epochs: int = 3) -> int:
  """`epochs` passes over `reference`, in the units of `count` (paper Table 7: three epochs)."""
  return epochs * sum(count(ex) for ex in reference)
