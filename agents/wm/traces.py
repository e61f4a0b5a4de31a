"""Reasoning-trace annotation of the audit's Table 3: entity reference, action revision, multiple
candidates, and output tokens per step.

Steps come from the evaluation episode rows (`experiments/wm/eval.py`): each model call paired
with the action the agent then sent. A step is *eligible* (the audit's appendix C.2) when its reply
has a parsed action and a non-empty <think>. Per (env, regime, condition) `sample_steps` draws up
to `n` eligible steps uniformly without replacement from a seeded generator (the audit: 300).

Entity reference (rule-based in both paths, as in the audit, which matches names and
identifiers): the step's reasoning mentions an entity of an observation the agent has seen so far
in the episode (o_0..o_t). Entities of an observation are identifiers "<word> <number>"
("drawer 3") and the head noun of each article phrase ("a rusty key" -> "key"; up to three words
after a/an/the/some, cut at a stopword or punctuation; directions and generic nouns such as
"room" are left out). A mention is a whole-word, case-insensitive match (a plural "s" allowed).

Action revision and multiple candidates come from one of two annotators, named in every table:

  RuleBasedTraceAnnotator (offline heuristic, not the audit's LLM annotation)
    candidates: the distinct actions the reasoning mentions, in order: admissible actions named
      in full, articles ignored (list regime), else "<verb> <object>" phrases with a verb of the
      env's action forms (no-list regime).
    multiple candidates: >= 2 candidates and a comparison word (or, either, instead, rather,
      alternatively, otherwise, option, prefer, better, versus) — a sequential plan ("go north,
      then take the key") is one candidate, as in the audit.
    revision: some candidate that is not the final action is followed, later in the reasoning,
      by a rejection word (but, however, instead, actually, won't, cannot, not possible, no need,
      pointless, rather than): a proposed action set aside or displaced.
  LLMTraceAnnotator (the audit's path: an LLM judge through the backend protocol, one batched
    call) with the audit's labelling instructions (our wording); rejected = yes -> revision,
    n_candidates >= 2 -> multiple candidates; a failed call or unparsable reply is no verdict
    (null, counted apart), never "no".

The rule-based labels are keyword heuristics: a comparison or rejection word anywhere after the
mentions counts, whatever it refers to. They have not been checked against human labels (the
audit's own review confirmed 40 of 60 LLM-labelled revisions); read them as a trend across
conditions scored the same way, not as the audit's numbers.
"""
import dataclasses
import json
import re
from typing import Mapping, Sequence

import numpy as np

from agents.wm.prompts import ACTION_FORMS, parse_think
from agents.wm.trajectory import PARSE_FAILURE_TAG
from lib.backends.protocol import SamplingParams

RULE_BASED_ANNOTATOR_NAME = "rule-based annotator (offline heuristic, not the paper's LLM judge)"


@dataclasses.dataclass(frozen=True)
class TraceStep:
  """One agent step: its reasoning, final action and what the agent had observed."""
  env: str
  regime: str
  condition: str
  seed: object                     # the run seed the step came from (any hashable label)
  task_id: str
  step: int
  think: str
  action: str | None               # None: no parsed action (the agent's fallback was sent)
  observations: tuple[str, ...]    # o_0..o_t, all the agent has observed
  admissible: tuple[str, ...] | None
  output_tokens: int | None

  @property
  def eligible(self) -> bool:
    return self.action is not None and bool(self.think.strip())


_LIST = re.compile(r"Actions available now: \[(.*)\]\s*(?:\n|$)")


def _admissible(messages: Sequence[Mapping]) -> tuple[str, ...] | None:
  """The list-regime candidates from the agent prompt's "Actions available now: [...]" line
  (agents/wm/prompts.agent_prompt), since the transcript keeps the prompt but not the list."""
  users = [m.get("content", "") for m in messages if m.get("role") == "user"]
  m = _LIST.search(users[-1]) if users else None
  return tuple(a.strip() for a in m.group(1).split(", ") if a.strip()) if m else None


def steps_from_row(row: Mapping, seed: object = 0) -> list[TraceStep]:
  """The steps of one host-loop episode row (a call followed by the action it produced)."""
  out, obs, pending = [], [], None
  for e in row.get("transcript", ()):
    if e.get("type") == "reset":
      obs = [e.get("obs", "")]
    elif e.get("type") == "call":
      pending = e if e.get("error") is None else None
    elif e.get("type") == "action":
      if pending is not None:
        text = pending.get("text") or ""
        action = None if e.get("tag") == PARSE_FAILURE_TAG else e.get("action")
        tokens = pending.get("output_tokens")
        out.append(TraceStep(str(row.get("env", "")), str(row.get("regime", "")),
                             str(row.get("condition", "")), seed,
                             f"{row.get('env', '')}/{row.get('level', '')}", len(out),
                             parse_think(text), action, tuple(obs),
                             _admissible(pending.get("messages") or ()),
                             None if tokens is None else int(tokens)))
      pending = None
      obs.append(e.get("obs", ""))
  return out


def sample_steps(steps: Sequence[TraceStep], n: int, seed: int = 0) -> list[TraceStep]:
  """Up to n eligible steps, uniformly without replacement (seeded), in their original order."""
  eligible = [s for s in steps if s.eligible]
  if len(eligible) <= n:
    return eligible
  idx = np.sort(np.random.default_rng(seed).choice(len(eligible), size=n, replace=False))
  return [eligible[i] for i in idx]


# ---- entities --------------------------------------------------------------------------------

_WORDS = re.compile(r"[a-z][a-z-]*|\d+|[^\sa-z\d]")
_STOP = frozenset("a an the some and or of to in on at is are was you your it its this that with "
                  "from into onto for as by be there here which what who not no but if then "
                  "also can will".split())
_GENERIC = frozenset("room place way thing things something nothing anything everything time "
                     "north south east west up down left right game task moment while lot bit "
                     "kind sort end side exit exits".split())
_ARTICLES = frozenset(("a", "an", "the", "some"))


def entities(observation: str) -> set[str]:
  """Identifiers ("drawer 3") and article-phrase head nouns ("key") of one observation."""
  toks = _WORDS.findall(observation.lower())
  out = set()
  for i, t in enumerate(toks):
    if t.isdigit() and i > 0 and toks[i - 1].isalpha() and toks[i - 1] not in _STOP:
      out.add(f"{toks[i - 1]} {t}")
    if t in _ARTICLES:
      phrase = []
      for w in toks[i + 1:i + 4]:
        if not w[0].isalpha() or w in _STOP:
          break
        phrase.append(w)
      if phrase and len(phrase[-1]) >= 3 and phrase[-1] not in _GENERIC:
        out.add(phrase[-1])
  return out


def references_entity(think: str, observations: Sequence[str]) -> bool:
  """Whether the reasoning names an entity of any observation seen so far."""
  text = " ".join(_WORDS.findall(think.lower()))
  ents = set().union(*(entities(o) for o in observations)) if observations else set()
  return any(re.search(rf"\b{re.escape(e)}s?\b", text) for e in ents)


# ---- the rule-based annotator -----------------------------------------------------------------

_COMPARE = re.compile(r"\b(or|either|instead|rather|alternatively|otherwise|options?|prefer\w*|"
                      r"better|versus|vs)\b", re.IGNORECASE)
_REJECT = re.compile(r"\b(but|however|instead|actually|won't|will not|cannot|can't|not possible|"
                     r"no need|pointless|rather than)\b", re.IGNORECASE)
_MARKERS = frozenset("instead rather first now again here there before after later so because "
                     "since otherwise but however actually".split())
_DET = re.compile(r"\b(the|a|an|my)\b\s*")


def _verbs(env: str) -> list[str]:
  """Action verbs of the env's no-list action forms: the words before the first "(" of each form
  ("look at (object)" -> "look at", "put (object) on (supporter)" -> "put"), longest first so
  "look around" beats "look"; "task" (ScienceWorld's repeat-the-task command) is left out, as the
  word names the goal far more often than the command."""
  verbs = set()
  for form in ACTION_FORMS.get(env, ()):
    for part in form.split(":")[0].split(" / "):
      lead = part.split("(")[0].split()
      if lead and lead != ["task"]:
        verbs.add(" ".join(lead))
  return sorted(verbs, key=len, reverse=True)


def _norm(a: str) -> str:
  return " ".join(_DET.sub("", a.lower()).split())


def candidates(step: TraceStep) -> list[tuple[int, str]]:
  """(position in `_norm(think)`, action) of each distinct candidate the reasoning mentions, in
  order; articles are ignored on both sides ("take the rusty key" mentions "take rusty key")."""
  think = _norm(step.think)
  found: dict[str, int] = {}
  if step.admissible:
    for a in step.admissible:
      m = re.search(rf"(?<!\w){re.escape(_norm(a))}(?!\w)", think)
      if m:
        found.setdefault(_norm(a), m.start())
  else:
    verbs = "|".join(re.escape(v) for v in _verbs(step.env))
    if verbs:
      for m in re.finditer(rf"\b({verbs})\b((?:\s+[a-z]+){{0,2}}(?:\s+\d+)?)", think):
        obj = []
        for w in m.group(2).split():
          if w in _STOP or w in _MARKERS:
            break
          obj.append(w)
        key = _norm(" ".join([m.group(1)] + obj))
        found.setdefault(key, m.start())
  return sorted(((p, a) for a, p in found.items()))


def _is_final(candidate: str, action: str | None) -> bool:
  if action is None:
    return False
  return set(candidate.split()) <= set(_norm(action).split())


def rule_labels(step: TraceStep) -> dict:
  """{"n_candidates", "multiple", "revision"} of one step by the rule-based heuristic."""
  cands, think = candidates(step), _norm(step.think)
  multiple = len(cands) >= 2 and bool(_COMPARE.search(think))
  revision = any(not _is_final(a, step.action) and _REJECT.search(think, pos)
                 for pos, a in cands)
  return {"n_candidates": min(len(cands), 3), "multiple": multiple, "revision": bool(revision)}


class RuleBasedTraceAnnotator:
  """Offline heuristic labels (see the module docstring); named as such in every table."""

  name = RULE_BASED_ANNOTATOR_NAME

  def annotate(self, steps: Sequence[TraceStep]) -> list[dict]:
    return [rule_labels(s) for s in steps]


# ---- the LLM-judge annotator ------------------------------------------------------------------

def annotation_prompt(think: str, action: str) -> str:
  """The audit's appendix E.4 labelling instructions (our wording) for one step."""
  return (
      "You label one step of an AI agent acting in a text environment. The agent wrote private "
      "reasoning (THINK) and then sent one action (FINAL ACTION). Label how it handled ACTION "
      "CANDIDATES inside THINK.\n\n"
      "1. A candidate is a concrete action or plan the agent explicitly considers as its NEXT "
      "move. A sequential plan (\"go to the desk, then take the CD\") is ONE candidate. A sweep "
      "over several places to check one after another is ONE candidate, even when the agent "
      "picks where to start. Conditional plans for later steps are not candidates. Checks "
      "phrased as \"see if X\" are candidates. An action raised and set aside (\"I could X, but "
      "...\", the eliminated side of \"X or Y\") is a candidate. Count separate candidates only "
      "when options are weighed against each other for the next move; restating one action in "
      "other words is still one candidate.\n"
      "2. rejected is \"yes\" iff the agent considered a candidate for this step and then "
      "dismissed or displaced it (\"but\", \"however\", \"instead\", \"no need\", switching "
      "to another choice, reordering which to do first). Deferring a later step of its own plan, "
      "choosing where to start a sweep, or explaining why a PREVIOUS step failed is not "
      "rejection.\n\n"
      f"THINK: {think}\nFINAL ACTION: {action}\n\n"
      "Write STRICT JSON as the last thing in your reply: {\"candidates\": [short paraphrases in "
      "order], \"n_candidates\": 0|1|2|3 (3 means 3 or more), \"rejected\": \"yes\"|\"no\"}")


_JSON = re.compile(r"\{[^{}]*\}", re.DOTALL)


def parse_annotation(reply: str) -> dict | None:
  """{"n_candidates", "multiple", "revision"} from the last JSON object of a reply; None when
  there is none or its fields are missing or invalid."""
  for blob in reversed(_JSON.findall(reply or "")):
    try:
      d = json.loads(blob)
    except ValueError:
      continue
    n, rej = d.get("n_candidates"), str(d.get("rejected", "")).strip().lower()
    if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= 3 or rej not in ("yes",
                                                                                        "no"):
      return None
    return {"n_candidates": n, "multiple": n >= 2, "revision": rej == "yes"}
  return None


class LLMTraceAnnotator:
  """The audit's path: an LLM judge (any backend with `generate`) labels each step in one
  batched call; no verdict (failed call, unparsable reply) comes back as None."""

  def __init__(self, backend, params: SamplingParams = SamplingParams(max_tokens=512,
                                                                       temperature=0.0)):
    self.backend, self.params = backend, params
    self.name = f"LLM judge ({backend.name})"

  def annotate(self, steps: Sequence[TraceStep]) -> list[dict | None]:
    if not steps:
      return []
    convs = [[{"role": "user", "content": annotation_prompt(s.think, s.action or "")}]
             for s in steps]
    return [None if c.error is not None else parse_annotation(c.text)
            for c in self.backend.generate(convs, self.params)]


def table3_row(steps_all: Sequence[TraceStep], sampled: Sequence[TraceStep],
               labels: Sequence[dict | None], annotator_name: str) -> dict:
  """One Table 3 cell group: tokens per step (all steps with a count), entity / revision /
  multiple-candidate percentages over the sampled eligible steps (null without inputs)."""
  tokens = [s.output_tokens for s in steps_all if s.output_tokens is not None]
  judged = [lab for lab in labels if lab is not None]
  pct = lambda xs: 100.0 * float(np.mean(xs)) if len(xs) else None
  return {"steps": len(steps_all), "eligible": sum(s.eligible for s in steps_all),
          "sampled": len(sampled), "judged": len(judged),
          "tokens": float(np.mean(tokens)) if tokens else None,
          "entity": pct([references_entity(s.think, s.observations) for s in sampled]),
          "revision": pct([lab["revision"] for lab in judged]),
          "candidates": pct([lab["multiple"] for lab in judged]),
          "annotator": annotator_name}
