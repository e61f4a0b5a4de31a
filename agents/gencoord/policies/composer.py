"""Public-codebook composers: the binding code in, both role-local paths out.

- `program`: the programmatic direct-DSL reference (what the data builder's targets say): the
  sender writes its full SELF+REQ for its private binding; the receiver copies the delivered
  requested path into its SELF; the requester follows the response. It stands in for a
  perfectly trained model, so it is charged one learned call per generation.
- `rule_minimal_request`: forwards the sender's private binding; the public composer expands
  the binding code into both role-local paths (the receiver re-composes from `bind=`).
- `explicit_factor`: composes field by field from canonical factors (oracle factors).
`Composer` is the shared stage logic; the other rule modules (structure_view, lookup,
naturalized) subclass it and change only how the binding or the branch is obtained. With no
delivered request a receiver falls back to the first branch of the public codebook.
Quantities come from the deciding agent's observation: the goal count scales the branch and
the sender's obtain is net of its own starting inventory (`episode.holdings`).
"""
import json

from agents.gencoord import capability, crossproduct, templates
from agents.gencoord.episode import goal_count, holdings
from agents.gencoord.dsl import ParseError, PeerRequest, Proposal, parse, serialize
from agents.gencoord.policies.base import NO_PROPOSAL

_TEXT_CACHE: dict = {}
MEMOISE = True        # benchmarks switch memoisation off for the baseline loop


def _memo(key, make):
  # Composed texts are pure functions of the public branch: serialise each one once.
  if not MEMOISE:
    return make()
  hit = _TEXT_CACHE.get(key)
  if hit is None:
    hit = make()
    if len(_TEXT_CACHE) < 65_536:
      _TEXT_CACHE[key] = hit
  return hit


def proposal_text(branch: templates.Branch, peer: str) -> str:
  """The sender's Short DSL for a branch: its SELF path and the request for `peer`'s path."""
  return serialize(Proposal(branch.sender_path, (PeerRequest(peer, branch.receiver_path),)))


def self_text(path) -> str:
  """Short DSL committing `path` for oneself and requesting nothing."""
  return serialize(Proposal(tuple(path), ()))


def incoming_request(text: str | None):
  """The delivered request line parsed on its own, or None when absent or undecodable."""
  if not text:
    return None
  try:
    q = parse("SELF -\n" + text)
  except ParseError:
    return None
  return q.peer_requests[0] if q.peer_requests else None


def _bind_of(request) -> str | None:
  for t in request.requested_plan:
    if "bind" in t.args:
      return t.args["bind"]
  return None


class Composer:
  """Shared stage logic (a `CommitmentPolicy`): subclasses decide how the sender's binding
  (`sender_binding`) or the branch (`_branch`) is obtained."""
  name = "composer"
  learned_calls = 0
  surface = "dsl"

  def generate(self, contexts):
    """One Short DSL text per local context (see `CommitmentPolicy.generate`)."""
    return [self._one(c) for c in contexts]

  def sender_binding(self, ctx) -> str | None:
    """The binding code the sender commits to (None: no proposal)."""
    return ctx.observation.get("active_binding")

  def _branch(self, ctx, binding, sender, receiver):
    return templates.get(ctx.observation["template"]).branch(binding, sender, receiver,
                                                             goal_count(ctx), holdings(ctx))

  def _text(self, ctx, binding, sender, receiver, kind) -> str:
    """Serialised proposal (kind="proposal") or receiver SELF (kind="receiver"), memoised on
    the key that fully determines it (public fields, goal count, the sender's holdings)."""
    key = (type(self).__name__, ctx.observation["template"], binding, sender, receiver,
           goal_count(ctx), tuple(sorted(holdings(ctx).items())), kind, ctx.prior.get("view"))

    def make():
      branch = self._branch(ctx, binding, sender, receiver)
      if kind == "proposal":
        return proposal_text(branch, receiver)
      if kind == "first_step":            # single-step control: first task + the request
        return serialize(Proposal(branch.sender_path[:1],
                                  (PeerRequest(receiver, branch.receiver_path),)))
      if kind == "rest":
        return self_text(branch.sender_path[1:])
      return self_text(branch.receiver_path)
    return _memo(key, make)

  def _one(self, ctx) -> str:
    stage = ctx.stage
    if stage == "sender_initial":
      b = self.sender_binding(ctx)
      if b is None:
        return NO_PROPOSAL
      kind = "first_step" if ctx.prior.get("horizon") == "single" else "proposal"
      return self._text(ctx, b, ctx.agent, ctx.peer, kind)
    if stage == "sender_after_obtain":
      b = self.sender_binding(ctx)
      return NO_PROPOSAL if b is None else self._text(ctx, b, ctx.agent, ctx.peer, "rest")
    if stage == "receiver_after_request":
      return self.receiver(ctx)
    if stage == "requester_initial":
      default = ctx.prior["codebook"][0]
      return self._text(ctx, default, ctx.agent, ctx.peer, "proposal")
    if stage == "requester_after_response":
      initial = parse(ctx.history[0])
      tmpl = templates.get(ctx.observation["template"])
      asked = capability.requested_branch(tmpl, initial.peer_requests[0], ctx.agent, ctx.peer,
                                          goal_count(ctx))
      body = json.loads(ctx.incoming)
      response = capability.Response(body.get("decision"), body.get("reason"),
                                     body.get("counter_offer_id"))
      b = capability.branch_of_response(response, asked)
      return NO_PROPOSAL if b is None else proposal_text(
          self._branch(ctx, b, ctx.agent, ctx.peer), ctx.peer)
    if stage == "centralized":
      mode = ctx.observation["views"][ctx.peer].get("workcell_mode")
      b = capability.MODE_BRANCH.get(mode, ctx.prior["codebook"][0])
      return self._text(ctx, b, ctx.agent, ctx.peer, "proposal")
    raise ValueError(f"{self.name} has no policy for stage {stage!r}")

  def receiver(self, ctx) -> str:
    """The receiver's SELF: the branch named by the delivered request's `bind=`."""
    request = incoming_request(ctx.incoming)
    b = _bind_of(request) if request is not None else ctx.prior["codebook"][0]
    if b is None or b not in ctx.prior["codebook"]:
      return NO_PROPOSAL
    return self._text(ctx, b, ctx.peer, ctx.agent, "receiver")


class ProgramPolicy(Composer):
  """The programmatic reference: the receiver copies the delivered requested path."""
  name = "program"
  learned_calls = 1

  def receiver(self, ctx) -> str:
    request = incoming_request(ctx.incoming)
    if request is None:
      if ctx.incoming:
        return NO_PROPOSAL
      return super().receiver(ctx)
    return self_text(request.requested_plan)


class RuleMinimalRequest(Composer):
  """Forwards the private binding; both sides compose from the public codebook."""
  name = "rule_minimal_request"


class ExplicitFactorComposer(Composer):
  """Builds the branch from canonical factor fields (cross-product suite) or the binding."""
  name = "explicit_factor"

  def sender_binding(self, ctx):
    f = ctx.observation.get("factors")
    if f is None:
      return ctx.observation.get("active_binding")
    return "+".join((f["recipe"], f["destination"], f["actor"], f["multiplier"]))

  def _branch(self, ctx, binding, sender, receiver):
    if ctx.observation["template"] == crossproduct.TEMPLATE.name:
      return templates.net_of_holdings(
          crossproduct.compose_factors(*crossproduct.factors(binding), sender, receiver,
                                       binding), holdings(ctx))
    return super()._branch(ctx, binding, sender, receiver)
