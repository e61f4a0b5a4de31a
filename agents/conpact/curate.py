"""ConPAct-R/S training data from logged ConPAct trajectories (results rows of conpact_eval).

An example is {"messages": context, "target": reply, "role", "source"}: the loss is applied to
`target` only; everything before it -- including a conflicting earlier reply in a discussion --
is context. A reply is a valid target only if it is usable (its action or sub-goal parses, no
fallback) and, where the agent recorded the ground truth of the frame the reply saw (every
asserting call of Plan-Act/ConPAct), its assertion is found and every stated applicable field
matches that truth -- so a confidently wrong reply that happened to agree with its teammate, or
a wrong one later in a segment, is never trained on.

Components (paper Fig. 6a / Table 20 ablations):
  consistency filtering     targets come only from consistent segments: the planner call and the
                            actor calls of a sub-goal whose initial check found no contradiction
                            (and, with `success_only`, from successful rollouts)
  reconciliation supervision  the final-round discussion replies of repaired checks, in their
                            discussion context (original prompt, the conflicting reply, feedback)
  reconciliation replay     the same repaired replies replayed at the original decision point,
                            without the conflict turn, so the consistent reading is learned as the
                            first answer

Our reading where the paper leaves details open: a segment is the calls from a planner call to
the next one; "validated" = assertion matches ground truth; replay re-uses the original prompt.
`match_budget` trims/cycles the examples to the token budget of a ReAct SFT reference (paper Table
7: three epochs of ReAct SFT, token-matched across methods).
"""
import dataclasses
from typing import Callable

import numpy as np

from agents.conpact import parse, schemas
from lib.tokenizer import render_chat


@dataclasses.dataclass(frozen=True)
class CurateConfig:
  consistency_filtering: bool = True
  reconciliation_supervision: bool = True
  reconciliation_replay: bool = True
  success_only: bool = True


def _role(tag: str) -> str:
  return "planner" if tag.startswith("planner") else "actor"


def valid_reply(text: str, tag: str, truth: dict | None, schema: schemas.Schema,
                action_names) -> bool:
  """Usable and, where it asserts, correct against ground truth (`truth` in JSON form)."""
  role = _role(tag)
  if role == "planner" and not parse.extract_tag(text, "subgoal"):
    return False
  if role == "actor" and parse.parse_action(text, action_names) is None:
    return False
  a = parse.parse_assertion(text, schema)
  if a.invalid or (truth is not None and not a.found):
    return False
  if truth is None:
    return True
  stated = {k: schemas.to_json(v) for k, v in a.values.items() if v is not None}
  return all(truth.get(k) is None or truth[k] == v for k, v in stated.items())


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


def curate_row(row: dict, schema: schemas.Schema, action_names, cfg: CurateConfig) -> list[dict]:
  if cfg.success_only and not row["success"]:
    return []
  calls = [e for e in row["transcript"] if e["type"] == "call" and e.get("error") is None]
  checks = {r["calls"]["planner"]: r for r in row["agent"]["records"] if r["kind"] == "pair"}
  truth_of = {}  # call index -> ground truth of the frame that call saw
  for r in row["agent"]["records"]:
    for i in (r.get("calls") or {}).values():
      truth_of[i] = r["truth"]
  out = []
  for seg in _segments(calls):
    check = checks.get(seg[0])
    truth = check["truth"] if check else None
    consistent = check is not None and not check["conflicts"]
    if consistent or not cfg.consistency_filtering:
      for i in seg:
        c = calls[i]
        if c["tag"] not in ("planner", "actor"):
          continue
        # Calls without a recorded truth (no assertions prompted) are checked for usability only.
        if valid_reply(c["text"], c["tag"], truth_of.get(i), schema, action_names):
          out.append(_example(c, _role(c["tag"]), "consistent" if consistent else "unfiltered"))
    d = check.get("discussion") if check else None
    if not d or not d["repaired"]:
      continue
    last = d["rounds"][-1]
    for key in ("planner_call", "actor_call"):
      if key not in last:
        continue
      c = calls[last[key]] if last[key] < len(calls) else None
      if c is None or not valid_reply(c["text"], c["tag"], truth, schema, action_names):
        continue
      role = _role(c["tag"])
      if cfg.reconciliation_supervision:
        out.append(_example(c, role, "reconciliation"))
      if cfg.reconciliation_replay:
        original = calls[check["calls"][role]]
        out.append(_example(c, role, "replay", messages=original["messages"]))
  return out


def curate(rows, schema: schemas.Schema, action_names, cfg: CurateConfig = CurateConfig()):
  return [ex for row in rows for ex in curate_row(row, schema, action_names, cfg)]


def react_reference(rows, schema: schemas.Schema, action_names) -> list[dict]:
  """ReAct SFT reference examples: usable actor replies of successful ReAct rollouts."""
  out = []
  for row in rows:
    if not row["success"]:
      continue
    for c in row["transcript"]:
      if c["type"] == "call" and c.get("error") is None and \
          parse.parse_action(c["text"], action_names) is not None:
        out.append(_example(c, "actor", "react"))
  return out


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
  """(input ids, loss mask) for one example: chat-rendered context, then target + EOS (masked in)."""
  prompt = tokenizer(render_chat(tokenizer, example["messages"]), add_special_tokens=False)["input_ids"]
  target = tokenizer(example["target"], add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
  return prompt + target, [0] * len(prompt) + [1] * len(target)


def sft_batch(examples: list[dict], tokenizer, max_len: int) -> dict:
  """lib/sft.py's batch layout (right-padded); rows longer than max_len keep their LAST tokens so
  the target survives truncation."""
  ids = np.full((len(examples), max_len), tokenizer.pad_token_id, np.int32)
  attn = np.zeros((len(examples), max_len), np.int32)
  mask = np.zeros((len(examples), max_len), np.int32)
  for r, ex in enumerate(examples):
    x, m = tokenize(ex, tokenizer)
    x, m = x[-max_len:], m[-max_len:]
    ids[r, :len(x)], attn[r, :len(x)], mask[r, :len(m)] = x, 1, m
  return {"input_ids": ids, "attention_mask": attn, "loss_mask": mask}


def reference_budget(reference: list[dict], count: Callable[[dict], int], epochs: int = 3) -> int:
  return epochs * sum(count(ex) for ex in reference)
