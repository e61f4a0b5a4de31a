"""Programmatic supervision rows for learned policies (prompt and target stored separately).

Forward route (Table S5): for every episode one `sender_initial` row (target: SELF+REQ) and one
`receiver_after_request` row (context includes the delivered REQ; target: downstream SELF and
`REQ -`), so the 480 training clusters x 2 role views give 960 + 960 rows. The single-step
control (horizon="single") commits only the first sender step with the request and adds one
`sender_after_obtain` row per episode (the rest of the sender path, decided after the obtain
step ran): 960 + 960 + 960 rows.
Controlled free-form (surface "freeform", multi-step) is a dialogue (dialogue.py): one row per
turn, each with the earlier turns in its context, so a quarter of the views add a
`sender_intent` and a `receiver_query` row: 1,200 sender + 1,200 receiver rows (Table S6).
Goal x Capability adds `requester_initial` and `requester_after_response` rows, plus
`centralized` rows for the full-information reference.

Targets can be written on four surfaces: Short DSL, JSON, controlled free-form and factor
codes (the binding id). `validate` decodes a target and checks it maps back to the row's
binding, i.e. equals the canonical branch whose terminal predicate the episode declares.
"""
import dataclasses

from agents.gencoord import capability, dialogue, episode as E, surfaces, templates
from agents.gencoord.dsl import PeerRequest, Proposal, parse, request_line, serialize
from agents.gencoord.prompt import render
from agents.gencoord.skills import normalize_path, produces


@dataclasses.dataclass(frozen=True)
class Row:
  stage: str
  episode_id: str
  cluster_id: str
  template: str
  binding: str
  role_view: int
  surface: str
  context: E.LocalContext
  target: str

  @property
  def prompt(self) -> str:
    return render(self.context)

  def to_json(self) -> dict:
    """The JSONL record (the written files add `prompt_sha256`:
    `agents.gencoord.learned.split_audit.row_record`)."""
    return {"stage": self.stage, "episode_id": self.episode_id, "cluster_id": self.cluster_id,
            "template": self.template, "binding": self.binding, "role_view": self.role_view,
            "surface": self.surface, "prompt": self.prompt, "target": self.target}


def _encode(q: Proposal, surface: str, code: str) -> str:
  if surface == "dsl":
    return serialize(q)
  if surface == "factor":
    return code
  return surfaces.ENCODERS[surface](q)


def _full(branch, peer) -> Proposal:
  return Proposal(branch.sender_path, (PeerRequest(peer, branch.receiver_path),))


def forward_rows(episodes, surface: str = "dsl", horizon: str = "multi") -> list[Row]:
  if horizon not in ("multi", "single"):
    raise ValueError(f"horizon must be multi or single, got {horizon!r}")
  if surface == "freeform" and horizon == "multi":
    return dialogue_rows(episodes)
  rows = []
  for ep in episodes:
    br = ep.branch()
    q = _full(br, ep.receiver)
    first = Proposal(br.sender_path[:1], q.peer_requests)
    mk = lambda stage, ctx, q_, code: Row(stage, ep.episode_id, ep.cluster_id,  # noqa: E731
                                          ep.template, ep.binding, ep.role_view, surface, ctx,
                                          _encode(q_, surface, code))
    if horizon == "multi":
      rows.append(mk("sender_initial", E.sender_context(ep), q, ep.binding))
    else:
      rows.append(mk("sender_initial", E.sender_context(ep, "single"), first, ep.binding))
      produced = produces(normalize_path(br.sender_path[:1], ep.sender)[0])
      ctx = E.sender_after_step_context(ep, serialize(Proposal(br.sender_path[:1], ())),
                                        produced)
      rows.append(mk("sender_after_obtain", ctx, Proposal(br.sender_path[1:], ()),
                     ep.binding))
    rows.append(mk("receiver_after_request", E.receiver_context(ep, request_line(q)),
                   Proposal(br.receiver_path, ()), ep.binding))
  return rows


def dialogue_rows(episodes) -> list[Row]:
  """Every turn of each episode's controlled free-form dialogue, gold earlier turns in context."""
  return [Row(stage, ep.episode_id, ep.cluster_id, ep.template, ep.binding, ep.role_view,
              "freeform", ctx, target)
          for ep in episodes for stage, ctx, target in dialogue.gold_dialogue(ep)]


def capability_rows(episodes, surface: str = "dsl", centralized: bool = False) -> list[Row]:
  """Requester-initial and requester-after-response rows (responses from the true mode)."""
  rows = []
  for ep in episodes:
    tmpl = templates.get(ep.template)
    default = tmpl.bindings[0]
    q0 = _full(ep.branch(default), ep.receiver)
    rho = capability.respond(tmpl, q0.peer_requests[0], ep.sender, ep.receiver, ep.peer_mode,
                             ep.goal_count)
    q1 = _full(ep.branch(), ep.receiver)
    mk = lambda stage, ctx, q_, code: Row(stage, ep.episode_id, ep.cluster_id,  # noqa: E731
                                          ep.template, code, ep.role_view, surface, ctx,
                                          _encode(q_, surface, code))
    rows.append(mk("requester_initial", E.requester_context(ep), q0, default))
    rows.append(mk("requester_after_response",
                   E.requester_context(ep, serialize(q0), rho.wire()), q1, ep.binding))
    if centralized:
      rows.append(mk("centralized", E.centralized_context(ep), q1, ep.binding))
  return rows


def decode(row: Row) -> Proposal:
  """The row's target as a Proposal (a free-form intent turn: its own path, no request)."""
  if row.stage == "sender_intent":
    return Proposal(dialogue.decode_turn(row.target).payload, ())
  if row.surface == "dsl":
    return parse(row.target)
  if row.surface == "factor":
    tmpl = templates.get(row.template)
    ctx = row.context
    if row.stage == "receiver_after_request":
      return Proposal(tmpl.branch(row.target, ctx.peer, ctx.agent,
                                  E.goal_count(ctx)).receiver_path, ())
    br = tmpl.branch(row.target, ctx.agent, ctx.peer, E.goal_count(ctx), E.holdings(ctx))
    if row.stage == "sender_after_obtain":
      return Proposal(br.sender_path[1:], ())
    if ctx.prior.get("horizon") == "single":
      return Proposal(br.sender_path[:1], (PeerRequest(ctx.peer, br.receiver_path),))
    return _full(br, ctx.peer)
  return surfaces.DECODERS[row.surface](row.target)


def validate(row: Row) -> bool:
  """The target decodes and equals the canonical object of the row's binding."""
  ctx = row.context
  if row.stage == "receiver_query":          # a state reply states the speaker's inventory
    turn = dialogue.decode_turn(row.target)
    return turn.kind == "state" and turn.payload == dict(ctx.observation["inventory"])
  snd, rcv = ((ctx.peer, ctx.agent) if row.stage == "receiver_after_request"
              else (ctx.agent, ctx.peer))
  canon = templates.get(row.template).branch(row.binding, snd, rcv, E.goal_count(ctx),
                                             E.holdings(ctx))
  q = decode(row)
  if row.stage == "receiver_after_request":
    return (not q.peer_requests and
            normalize_path(q.self_plan, rcv) == normalize_path(canon.receiver_path, rcv))
  if row.stage == "sender_after_obtain":
    return (not q.peer_requests and
            normalize_path(q.self_plan, snd) == normalize_path(canon.sender_path[1:], snd))
  if row.stage == "sender_intent":
    return normalize_path(q.self_plan, snd) == normalize_path(canon.sender_path, snd)
  own = canon.sender_path[:1] if ctx.prior.get("horizon") == "single" else canon.sender_path
  return (len(q.peer_requests) == 1 and q.peer_requests[0].target == rcv and
          normalize_path(q.self_plan, snd) == normalize_path(own, snd) and
          normalize_path(q.peer_requests[0].requested_plan, rcv) ==
          normalize_path(canon.receiver_path, rcv))
