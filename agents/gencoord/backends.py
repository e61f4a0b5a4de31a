"""Commitment backends: model-visible local contexts in, Short DSL (or other surface) text out.

A backend never sees the world, the episode or the other agent's private facts; it sees only
`LocalContext`s. `generate` takes a list so learned backends can batch one stage across many
episodes; the closed loop (parse -> check -> resolve -> materialize -> compile -> execute ->
verify) is identical whichever backend produced the text. `learned_calls` is the number of
model calls one generation costs (0 for deterministic rules, 1 for a learned model).
"""
from typing import Callable, Protocol, Sequence

from agents.gencoord import surfaces, templates
from agents.gencoord.dsl import ParseError, PeerRequest, Proposal, serialize
from agents.gencoord.episode import LocalContext

NO_PROPOSAL = "SELF -\nREQ -"      # a legal program with no commitment content


class Backend(Protocol):
  name: str
  learned_calls: int

  def generate(self, contexts: Sequence[LocalContext]) -> list[str]:
    """One output text per context, in order."""
    ...


_REGISTRY: dict = {}


def register(name: str, factory) -> None:
  """Adds a backend factory (e.g. learned backends from a later module); duplicates raise."""
  if name in _REGISTRY:
    raise ValueError(f"backend {name!r} is already registered")
  _REGISTRY[name] = factory


def make(name: str, **kwargs) -> Backend:
  if name not in _REGISTRY:
    # Importing the rule module registers the model-free backends on first use.
    from agents.gencoord import backends_rule  # noqa: F401
  if name not in _REGISTRY:
    raise KeyError(f"unknown backend {name!r}; valid: {', '.join(sorted(_REGISTRY))}")
  return _REGISTRY[name](**kwargs)


def names() -> list[str]:
  from agents.gencoord import backends_rule  # noqa: F401
  return sorted(_REGISTRY)


def _factor_to_dsl(ctx: LocalContext, code: str) -> str:
  tmpl = templates.get(ctx.observation["template"])
  code = code.strip()
  if code not in tmpl.bindings:
    raise ParseError(f"factor code {code!r} is not in the public codebook")
  scale = ctx.observation["scale"]
  if ctx.stage == "receiver_after_request":
    return serialize(Proposal(tmpl.branch(code, ctx.peer, ctx.agent, scale).receiver_path, ()))
  br = tmpl.branch(code, ctx.agent, ctx.peer, scale)
  return serialize(Proposal(br.sender_path, (PeerRequest(ctx.peer, br.receiver_path),)))


def to_short_dsl(ctx: LocalContext, raw: str, surface: str) -> str:
  """Converts one generated output on `surface` to Short DSL for the shared closed loop.

  Undecodable output becomes a string that fails `dsl.parse`, so the protocol records
  PARSE_FAILURE (and keeps the raw text in the record for inspection).
  """
  if surface == "dsl":
    return raw
  try:
    if surface == "factor":
      return _factor_to_dsl(ctx, raw)
    return serialize(surfaces.DECODERS[surface](raw))
  except (ParseError, ValueError, KeyError) as e:
    return f"UNDECODABLE {surface}: {e}: {raw!r}"


class PromptBackend:
  """Adapter for text generators (learned models): render each context to a prompt, generate
  a batch of texts with one call, and map them from `surface` to Short DSL.

  generate_texts: list of prompts -> list of outputs (one batched model call per stage).
  """

  def __init__(self, generate_texts: Callable[[list], list], name: str = "prompt",
               surface: str = "dsl", learned_calls: int = 1, render=None):
    if surface not in surfaces.SURFACES:
      raise ValueError(f"unknown surface {surface!r}; valid: {surfaces.SURFACES}")
    from agents.gencoord.prompt import render as default_render
    self.generate_texts, self.name, self.surface = generate_texts, name, surface
    self.learned_calls, self.render = learned_calls, render or default_render

  def generate_raw(self, contexts: Sequence[LocalContext]) -> list[str]:
    """The generator's outputs on this surface, unconverted (free-form dialogue turns)."""
    if not contexts:
      return []
    outputs = self.generate_texts([self.render(c) for c in contexts])
    if len(outputs) != len(contexts):
      raise ValueError(f"generator returned {len(outputs)} outputs for {len(contexts)} prompts")
    return list(outputs)

  def generate(self, contexts: Sequence[LocalContext]) -> list[str]:
    if not contexts:
      return []
    outputs = self.generate_raw(contexts)
    texts = [to_short_dsl(c, o, self.surface) for c, o in zip(contexts, outputs)]
    self.last_wire = [wire_payload(o, t, self.surface) for o, t in zip(outputs, texts)]
    return texts


def wire_payload(raw: str, dsl_text: str, surface: str) -> str | None:
  """What crosses the agent boundary on this surface: the REQ object for structured surfaces
  (Short DSL request line, JSON `req`, or the composed Short DSL request for factor codes),
  the sender's sentence for single-sentence free-form (the multi-turn dialogue counts all its
  turns itself, protocol.run_dialogue). None when undecodable (the protocol fails it)."""
  try:
    if surface == "freeform":
      return raw
    if surface == "json":
      import json
      return json.dumps(json.loads(raw)["req"], separators=(",", ":"))
    from agents.gencoord.dsl import parse, request_line
    return request_line(parse(dsl_text))
  except Exception:  # undecodable output: the parse step records the failure
    return None
