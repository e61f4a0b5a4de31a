"""Controlled free-form as a multi-turn dialogue (the paper's free-form surface comparator).

The two agents talk in controlled natural language until the shared extractor recovers the
commitment from the dialogue. Every turn is one model call; turns alternate sender, receiver:

  sender_intent           "I plan to <clauses>. <peer>, what do you hold?"     (state + intent)
  receiver_query          "I hold <n item, ...>. What do you need from me?"    (state + question)
  sender_initial          "I will <clauses>. <peer>, please <clauses>."        (the proposal)
  receiver_after_request  "I will <clauses>. I request nothing."               (the commitment)

Schedule: one round (proposal, commitment) in most episodes; in role view 1 of odd world
variants the dialogue opens with one extra round (intent, state reply). The rule reads only
public, answer-independent fields (both bindings of a binding pair share it) and selects exactly
a quarter of every forward pool: the 960 training views give 1,200 sender + 1,200 receiver turns
and 2.5 calls per episode, the paper's Matched-SFT free-form budget (Table S6, Table 2).

A turn's context has the earlier turns as history ("speaker: text") and the latest peer turn
as the incoming message. Wire bytes are all dialogue bytes before extraction.
"""
import dataclasses
import re

from agents.gencoord import episode as E, surfaces
from agents.gencoord.dsl import ParseError, PeerRequest, Proposal, parse, request_line
from agents.gencoord.policies.base import CommitmentPolicy

ONE_ROUND = ("sender_initial", "receiver_after_request")
TWO_ROUNDS = ("sender_intent", "receiver_query") + ONE_ROUND


def rounds(ep: E.Episode) -> int:
  """2 in role view 1 of odd world variants (a fixed quarter of every pool), else 1."""
  return 2 if ep.role_view == 1 and ep.variant % 2 == 1 else 1


def schedule(ep: E.Episode) -> tuple:
  return TWO_ROUNDS if rounds(ep) == 2 else ONE_ROUND


# ---------------------------------------------------------------------------- turn grammar
@dataclasses.dataclass(frozen=True)
class Turn:
  kind: str          # intent (payload: own tasks) | state (inventory dict) | proposal (Proposal)
  payload: object


def encode_intent(tasks, peer: str) -> str:
  mine = surfaces.clauses(tasks) if tasks else "do nothing"
  return f"I plan to {mine}. {peer}, what do you hold?"


def encode_state(inventory) -> str:
  items = ", ".join(f"{n} {item}" for item, n in sorted(dict(inventory).items()) if n)
  return f"I hold {items or 'nothing'}. What do you need from me?"


_NAME = r"[A-Za-z0-9_.:/+\-]+"
_INTENT = re.compile(rf"I plan to (.+?)\. ({_NAME}), what do you hold\?")
_STATE = re.compile(r"I hold (.+?)\. What do you need from me\?")
_ITEM = re.compile(rf"([1-9][0-9]*) ({_NAME})")


def decode_turn(text) -> Turn:
  """Any turn of the dialogue -> Turn; ParseError when it follows none of the four frames."""
  if not isinstance(text, str):
    raise ParseError("expected str")
  text = text.strip()
  m = _INTENT.fullmatch(text)
  if m:
    body = m.group(1)
    return Turn("intent", () if body == "do nothing" else surfaces.decode_clauses(body))
  m = _STATE.fullmatch(text)
  if m:
    if m.group(1) == "nothing":
      return Turn("state", {})
    inv = {}
    for part in m.group(1).split(", "):
      im = _ITEM.fullmatch(part)
      if not im or im.group(2) in inv:
        raise ParseError(f"bad inventory item {part!r}")
      inv[im.group(2)] = int(im.group(1))
    return Turn("state", inv)
  return Turn("proposal", surfaces.decode_freeform(text))


def extract(turns) -> tuple:
  """Shared extractor: dialogue turns (sender first, alternating) -> (sender Proposal with its
  request, receiver Proposal). A later statement of a speaker supersedes an earlier one.
  ParseError when a turn is undecodable or the dialogue holds no request or no commitment."""
  decoded = [decode_turn(t) for t in turns]
  sender = [d.payload for d in decoded[0::2] if d.kind == "proposal" and d.payload.peer_requests]
  receiver = [d.payload for d in decoded[1::2]
              if d.kind == "proposal" and not d.payload.peer_requests]
  if not sender:
    raise ParseError("the dialogue holds no request from the sender")
  if not receiver:
    raise ParseError("the dialogue holds no commitment from the receiver")
  return sender[-1], receiver[-1]


# ------------------------------------------------------------------------ turns in context
def context(ep: E.Episode, stage: str, turns) -> E.LocalContext:
  """The speaker's local context for the next turn, given the dialogue so far."""
  if stage not in TWO_ROUNDS:
    raise ValueError(f"unknown dialogue stage {stage!r}; valid: {TWO_ROUNDS}")
  turns = tuple(turns)
  speakers = [ep.sender if k % 2 == 0 else ep.receiver for k in range(len(turns))]
  base = (E.sender_context(ep) if stage.startswith("sender") else E.receiver_context(ep, None))
  history = tuple(f"{s}: {t}" for s, t in zip(speakers[:-1], turns[:-1]))
  return dataclasses.replace(base, stage=stage, history=history,
                             incoming=turns[-1] if turns else None)


def gold_turn(ep: E.Episode, stage: str) -> str:
  """What a perfect speaker says at `stage` (the supervision target)."""
  br = ep.branch()
  if stage == "sender_intent":
    return encode_intent(br.sender_path, ep.receiver)
  if stage == "receiver_query":
    return encode_state(ep.inventory(ep.receiver))
  if stage == "sender_initial":
    return surfaces.encode_freeform(
        Proposal(br.sender_path, (PeerRequest(ep.receiver, br.receiver_path),)))
  if stage == "receiver_after_request":
    return surfaces.encode_freeform(Proposal(br.receiver_path, ()))
  raise ValueError(f"unknown dialogue stage {stage!r}")


def gold_dialogue(ep: E.Episode) -> list:
  """[(stage, context, target)] for every turn of the episode's schedule."""
  out, turns = [], []
  for stage in schedule(ep):
    target = gold_turn(ep, stage)
    out.append((stage, context(ep, stage, turns), target))
    turns.append(target)
  return out


class Speaker:
  """Any Short DSL commitment policy (the program reference, a rule) as a dialogue participant
  (a `RawTextPolicy` on the freeform surface).

  Sender turns state the inner policy's proposal (its own path alone in the intent turn);
  state replies read the speaker's own inventory; a commitment turn decodes the incoming
  free-form proposal with the shared extractor, hands the inner policy the equivalent Short
  DSL request and states its answer. Charged the inner policy's calls per turn."""
  surface = "freeform"

  def __init__(self, inner: CommitmentPolicy):
    self.inner, self.name = inner, f"{inner.name}_dialogue"
    self.learned_calls = inner.learned_calls

  def generate_raw(self, contexts) -> list:
    return [self._one(c) for c in contexts]

  def _dsl(self, ctx, stage, incoming=None) -> Proposal:
    plain = dataclasses.replace(ctx, stage=stage, history=(), incoming=incoming)
    return parse(self.inner.generate([plain])[0])

  def _one(self, ctx) -> str:
    if ctx.stage == "sender_intent":
      return encode_intent(self._dsl(ctx, "sender_initial").self_plan, ctx.peer)
    if ctx.stage == "receiver_query":
      return encode_state(ctx.observation["inventory"])
    if ctx.stage == "sender_initial":
      return surfaces.encode_freeform(self._dsl(ctx, "sender_initial"))
    if ctx.stage == "receiver_after_request":
      try:
        line = request_line(surfaces.decode_freeform(ctx.incoming or ""))
      except (ParseError, ValueError, IndexError):
        line = "REQ -"            # no decodable request: the inner receiver sees none
      return surfaces.encode_freeform(self._dsl(ctx, "receiver_after_request", line))
    raise ValueError(f"{self.name} has no dialogue turn for stage {ctx.stage!r}")
