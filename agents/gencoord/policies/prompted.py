"""Text generators as commitment policies, and the surface -> Short DSL decoding they share.

`PromptPolicy` wraps any batched text generator (a learned model, a test oracle): render each
local context to a prompt, generate a batch of texts with one call, and map them from its
surface (dsl / json / freeform / factor) to Short DSL for the shared closed loop.
`decode_outputs` is that mapping together with the wire payload (what crosses the agent
boundary on the surface); `agents/gencoord/learned/policy.py` and the forward loop use it too.
"""
import json
from typing import Callable, Sequence

from agents.gencoord import prompt, surfaces, templates
from agents.gencoord.dsl import (ParseError, PeerRequest, Proposal, parse, request_line,
                                 serialize)
from agents.gencoord.episode import LocalContext, goal_count, holdings


def check_surface(surface: str) -> None:
  """Raises ValueError unless `surface` is one of `surfaces.SURFACES`."""
  if surface not in surfaces.SURFACES:
    raise ValueError(f"unknown surface {surface!r}; valid: {surfaces.SURFACES}")


def _factor_to_dsl(ctx: LocalContext, code: str) -> str:
  tmpl = templates.get(ctx.observation["template"])
  code = code.strip()
  if code not in tmpl.bindings:
    raise ParseError(f"factor code {code!r} is not in the public codebook")
  k = goal_count(ctx)
  if ctx.stage == "receiver_after_request":
    return serialize(Proposal(tmpl.branch(code, ctx.peer, ctx.agent, k).receiver_path, ()))
  br = tmpl.branch(code, ctx.agent, ctx.peer, k, holdings(ctx))
  return serialize(Proposal(br.sender_path, (PeerRequest(ctx.peer, br.receiver_path),)))


def to_short_dsl(ctx: LocalContext, raw: str, surface: str) -> str:
  """Converts one generated output on `surface` to Short DSL for the shared closed loop.

  Undecodable output becomes a string that fails `dsl.parse`, so the protocol records
  PARSE_FAILURE (and keeps the raw text in the record for inspection).

  Args:
    ctx: the local context the output answers (factor codes are composed against it).
    raw: the generated text.
    surface: dsl / json / freeform / factor.
  Returns:
    Short DSL text (or an unparsable marker string).
  """
  if surface == "dsl":
    return raw
  try:
    if surface == "factor":
      return _factor_to_dsl(ctx, raw)
    return serialize(surfaces.DECODERS[surface](raw))
  except (ParseError, ValueError, KeyError) as e:
    return f"UNDECODABLE {surface}: {e}: {raw!r}"


def wire_payload(raw: str, dsl_text: str, surface: str) -> str | None:
  """What crosses the agent boundary on this surface: the REQ object for structured surfaces
  (Short DSL request line, JSON `req`, or the composed Short DSL request for factor codes),
  the sender's sentence for single-sentence free-form (the multi-turn dialogue counts all its
  turns itself, protocol.run_dialogue). None when undecodable (the protocol fails it)."""
  try:
    if surface == "freeform":
      return raw
    if surface == "json":
      return json.dumps(json.loads(raw)["req"], separators=(",", ":"))
    return request_line(parse(dsl_text))
  except Exception:  # undecodable output: the parse step records the failure
    return None


def decode_outputs(contexts: Sequence[LocalContext], outputs: Sequence[str], surface: str
                   ) -> tuple[list[str], list[str | None]]:
  """Raw outputs on `surface` -> (Short DSL texts, wire payloads), one each per context."""
  texts = [to_short_dsl(c, o, surface) for c, o in zip(contexts, outputs)]
  return texts, [wire_payload(o, t, surface) for o, t in zip(outputs, texts)]


class PromptPolicy:
  """A batched text generator as a commitment policy (a `CommitmentPolicy` and a
  `RawTextPolicy`).

  Args:
    generate_texts: list of prompts -> list of outputs (one batched model call per stage).
    name: the policy's name in result rows.
    surface: what the generator writes: dsl / json / freeform / factor.
    learned_calls: model calls charged per generation.
    render: local context -> prompt (default `prompt.render`).
  """

  def __init__(self, generate_texts: Callable[[list], list], name: str = "prompt",
               surface: str = "dsl", learned_calls: int = 1, render=None):
    check_surface(surface)
    self.generate_texts, self.name, self.surface = generate_texts, name, surface
    self.learned_calls, self.render = learned_calls, render or prompt.render

  def generate_raw(self, contexts: Sequence[LocalContext]) -> list[str]:
    """The generator's outputs on this surface, unconverted (free-form dialogue turns)."""
    if not contexts:
      return []
    outputs = self.generate_texts([self.render(c) for c in contexts])
    if len(outputs) != len(contexts):
      raise ValueError(f"generator returned {len(outputs)} outputs for {len(contexts)} prompts")
    return list(outputs)

  def generate(self, contexts: Sequence[LocalContext]) -> list[str]:
    """Short DSL, one text per context (see `to_short_dsl`)."""
    return decode_outputs(contexts, self.generate_raw(contexts), self.surface)[0]
