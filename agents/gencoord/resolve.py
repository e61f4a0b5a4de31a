"""Resolve→ (forward) and Resolve← (feedback): join role-local paths into one commitment.

A commitment C = (S_i, S_j, b, P_C) holds the two normalised, actorized role-local paths, the
selected binding b and the merged predecessor relation P_C (node ids are ("S", k) for the
sender/requester path and ("R", k) for the receiver/peer path). Every resolver returns either a
`Commitment` or a `Conflict` whose `reason` says which condition failed; the protocol turns a
Conflict into RESOLUTION_CONFLICT.
"""
import dataclasses

from agents.gencoord import capability, templates
from agents.gencoord.dsl import Proposal
from agents.gencoord.skills import consumes, normalize_path, produces, value


@dataclasses.dataclass(frozen=True)
class Commitment:
  sender: str
  receiver: str
  sender_path: tuple            # NormTask, actor = sender
  receiver_path: tuple          # NormTask, actor = receiver
  binding: str | None
  edges: tuple                  # ((node, node), ...) merged predecessor relation
  direction: str                # "forward" | "feedback" | "self_plans"
  handoff: tuple                # (giver node, consumer node, item, count)


@dataclasses.dataclass(frozen=True)
class Conflict:
  reason: str


def _handoff(giver_path, taker_path, giver: str, taker: str, g: str, t: str, held=None):
  """HandoffCompatible: one producer-backed delivery from giver to taker, consumed by taker.

  held: the giver's starting inventory ({item: n}); what it holds counts towards the handed-off
  stock (its obtain step is net of it). Returns ((giver node, consumer node, item, count),
  None) or (None, reason).
  """
  hands = [k for k, n in enumerate(giver_path)
           if n.skill == "resource.deliver" and value(n, "to") is not None]
  if len(hands) != 1:
    return None, f"expected exactly one handoff from {giver}, found {len(hands)}"
  k = hands[0]
  hand = giver_path[k]
  if value(hand, "to") != taker:
    return None, f"handoff addressed to {value(hand, 'to')!r}, not to {taker!r}"
  item, count = value(hand, "item"), value(hand, "q")
  stock = dict(held or {}).get(item, 0)
  for n in giver_path[:k]:                    # the producer must hold the item at the handoff
    stock += produces(n).get(item, 0) - consumes(n).get(item, 0)
  if stock < count:
    return None, f"{giver} hands off {count} {item} but holds and yields {stock}"
  first, used, made = None, 0, 0
  for m, n in enumerate(taker_path):
    need = consumes(n).get(item, 0)
    if need and first is None:
      first = m
    used += need
    made += produces(n).get(item, 0)
  if first is None:
    return None, f"{taker} never consumes the handed-off {item}"
  if used > count + made:
    return None, f"{taker} consumes {used} {item} but receives {count}"
  return ((g, k), (t, first), item, count), None


def _merge(n_s: int, n_r: int, cross: list) -> tuple | None:
  """Role-local chains plus cross-agent edges; None when the merge has a cycle."""
  edges = [(("S", k), ("S", k + 1)) for k in range(n_s - 1)]
  edges += [(("R", k), ("R", k + 1)) for k in range(n_r - 1)]
  edges += cross
  nodes = [("S", k) for k in range(n_s)] + [("R", k) for k in range(n_r)]
  indeg = {v: 0 for v in nodes}
  succ = {v: [] for v in nodes}
  for a, b in edges:
    succ[a].append(b)
    indeg[b] += 1
  ready = [v for v in nodes if indeg[v] == 0]
  seen = 0
  while ready:
    v = ready.pop()
    seen += 1
    for w in succ[v]:
      indeg[w] -= 1
      if indeg[w] == 0:
        ready.append(w)
  return tuple(edges) if seen == len(nodes) else None


def _binding(paths) -> tuple:
  binds = {value(n, "bind") for path in paths for n in path} - {None}
  if len(binds) > 1:
    return None, f"multiple selected branches {sorted(binds)}"
  return (binds.pop() if binds else None), None


def join(s_path, r_path, snd: str, rcv: str, direction: str, binding=None, held=None):
  """HandoffCompatible + complete acyclic merge of two normalised role-local paths (held: the
  sender's starting inventory)."""
  hand, why = _handoff(s_path, r_path, snd, rcv, "S", "R", held)
  if hand is None:
    return Conflict(why)
  cross = [(hand[0], hand[1])]
  # A reverse delivery (receiver back to sender) adds an edge too; a cycle rejects the merge.
  back = [k for k, n in enumerate(r_path) if value(n, "to") == snd]
  for k in back:
    item = value(r_path[k], "item")
    users = [m for m, n in enumerate(s_path) if consumes(n).get(item)]
    if users:
      cross.append((("R", k), ("S", users[0])))
  edges = _merge(len(s_path), len(r_path), cross)
  if edges is None:
    return Conflict("predecessor merge has a cycle")
  bound, why = _binding((s_path, r_path))
  if why:
    return Conflict(why)
  if binding is not None and bound is not None and binding != bound:
    return Conflict(f"bind={bound} does not match the selected branch {binding}")
  return Commitment(snd, rcv, s_path, r_path, binding or bound, edges, direction, hand)


def resolve_forward(q_snd: Proposal, q_rcv: Proposal, snd: str, rcv: str, held=None):
  """Resolve→(q_snd, q_rcv): the receiver's SELF must realize the delivered request exactly
  (held: the sender's starting inventory, for the handoff check)."""
  if len(q_snd.peer_requests) != 1:
    return Conflict("sender proposal must carry exactly one peer request")
  req = q_snd.peer_requests[0]
  if req.target != rcv:
    return Conflict(f"request targets {req.target!r}, receiver is {rcv!r}")
  if not q_rcv.self_plan or q_rcv.peer_requests:
    return Conflict("receiver must answer with a non-empty SELF and REQ -")
  s_path = normalize_path(q_snd.self_plan, snd)
  r_path = normalize_path(req.requested_plan, rcv)
  u_path = normalize_path(q_rcv.self_plan, rcv)
  if u_path != r_path:                         # Realizes_K(U, R) <=> U = R  (Eq. S1)
    return Conflict("receiver SELF does not realize the requested path")
  return join(s_path, u_path, snd, rcv, "forward", held=held)


def resolve_self_plans(q_snd: Proposal, q_rcv: Proposal, snd: str, rcv: str, held=None):
  """Request-removed condition: join the two SELF paths with no request to realize."""
  if not q_rcv.self_plan:
    return Conflict("receiver produced no SELF path")
  return join(normalize_path(q_snd.self_plan, snd), normalize_path(q_rcv.self_plan, rcv),
              snd, rcv, "self_plans", held=held)


def proposal_branch(template: templates.Template, q: Proposal, req: str, peer: str,
                    k: int = 1):
  """B(q): the public branch whose composed request path q asks for at goal count k."""
  if len(q.peer_requests) != 1:
    return None
  return capability.requested_branch(template, q.peer_requests[0], req, peer, k)


def _goal_fields(q: Proposal) -> tuple:
  last = q.peer_requests[0].requested_plan[-1]
  return tuple(last.args.get(k) for k in ("item", "q", "dst"))


def resolve_feedback(template: templates.Template, q0: Proposal, response, q1: Proposal,
                     req: str, peer: str, k: int = 1, held=None):
  """Resolve←(q0, ρ, q1): the revision must realize the response-selected branch (k: the
  goal count; held: the requester's starting inventory)."""
  initial = proposal_branch(template, q0, req, peer, k)
  if initial is None:
    return Conflict("initial proposal selects no public branch")
  wanted = capability.branch_of_response(response, initial)
  if wanted is None:
    return Conflict(f"response {response.decision} selects no branch")
  got = proposal_branch(template, q1, req, peer, k)
  if got != wanted:
    return Conflict(f"revision selects {got}, response selected {wanted}")
  if q1.peer_requests[0].target != q0.peer_requests[0].target:
    return Conflict("revision changed the target peer")
  if _goal_fields(q1) != _goal_fields(q0):
    return Conflict("revision changed the requester goal fields")
  s_path = normalize_path(q1.self_plan, req)
  r_path = normalize_path(q1.peer_requests[0].requested_plan, peer)
  return join(s_path, r_path, req, peer, "feedback", binding=wanted, held=held)
