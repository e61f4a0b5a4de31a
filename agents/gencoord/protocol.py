"""Closed loops: Algorithm S1 (forward resolution) and S2 (bounded feedback resolution).

Both loops are batched by stage: every episode's first-stage context goes to the commitment
policy (`agents.gencoord.policies.base.CommitmentPolicy`) in one `generate` call, then every
surviving episode's second stage, so learned policies batch across episodes. Everything after
generation (parse -> contract check -> resolve -> materialize -> compile -> execute -> verify)
is deterministic and policy-independent.
Controlled free-form runs as a multi-turn dialogue (`run_dialogue`, batched by turn index)
whose extracted commitment joins the same route.

Conditions are interventions on what crosses the boundary, with the world, call schedule and
executor unchanged: forward `true` / `removed` (receiver gets no request; the two SELF paths are
joined) / `alternative` (the same template's request for the other binding replaces REQ);
feedback `local` (requester alone commits its initial proposal) / `correct` / `counterfactual`
(the response of the paired workcell mode is injected) / `centralized` (one call on merged views).
"""
import dataclasses

from agents.gencoord import capability, dialogue, episode as E, resolve, templates
from agents.gencoord.contract import valid_proposal
from agents.gencoord.dsl import (ParseError, PeerRequest, Proposal, parse, request_line,
                                 serialize)
from agents.gencoord.skills import produces
from agents.gencoord.materialize import MaterializationError, materialize
from agents.gencoord.policies import prompted
from agents.gencoord.policies.base import CommitmentPolicy, RawTextPolicy
from agents.gencoord.verify import execute_and_verify
from envs.minecraft.live.errors import BackendFailure

FAIL_CODES = ("PARSE_FAILURE", "CONTRACT_REJECT", "RESOLUTION_CONFLICT",
              "MATERIALIZATION_FAILURE", "EXECUTION_FAILURE", "HANDOFF_FAILURE",
              "TERMINAL_FAILURE")
# Infrastructure failures of a live world backend (server crash, bot timeout): not a protocol
# outcome, so kept apart from FAIL_CODES; the live runtime restarts before the next episode.
INFRA_CODES = ("SERVER_FAILURE",)
FORWARD_CONDITIONS = ("true", "removed", "alternative")
FEEDBACK_CONDITIONS = ("local", "correct", "counterfactual", "centralized")


@dataclasses.dataclass(frozen=True)
class Success:
  commitment: resolve.Commitment
  plan: object


@dataclasses.dataclass(frozen=True)
class NoCommitment:
  reason: str


@dataclasses.dataclass(frozen=True)
class Fail:
  code: str
  detail: str = ""

  def __post_init__(self):
    if self.code not in FAIL_CODES + INFRA_CODES:
      raise ValueError(f"unknown failure code {self.code!r}")


@dataclasses.dataclass
class Record:
  """One episode's outcome and online metrics."""
  ep: E.Episode
  condition: str
  policy: str                # the commitment policy's name
  result: object = None
  raw_valid: bool = True
  model_calls: int = 0
  wire_bytes: int = 0
  response_bytes: int = 0
  aggregation_bytes: int = 0
  executor_actions: int = 0
  handoff_verified: bool = False
  receiver_follows_request: bool | None = None   # forward: receiver SELF == delivered REQ
  commitment: resolve.Commitment | None = None
  texts: list = dataclasses.field(default_factory=list)

  @property
  def success(self) -> bool:
    return isinstance(self.result, Success)

  @property
  def failure_code(self) -> str:
    if isinstance(self.result, Fail):
      return self.result.code
    return "NO_COMMITMENT" if isinstance(self.result, NoCommitment) else ""


def _decode(rec: Record, text: str, agent: str):
  """Parse + contract check; sets rec.result on failure and returns the proposal or None."""
  rec.texts.append(text)
  try:
    q = parse(text)
  except ParseError as e:
    rec.raw_valid = False
    rec.result = Fail("PARSE_FAILURE", str(e))
    return None
  if not valid_proposal(q, agent, rec.ep.public):
    rec.result = Fail("CONTRACT_REJECT", "typed contract check failed")
    return None
  return q


def _one_request(q: Proposal) -> bool:
  return len(q.peer_requests) == 1 and bool(q.peer_requests[0].requested_plan)


def _alternative(ep: E.Episode) -> PeerRequest:
  """The executable request that would be correct under the template's other binding."""
  tmpl = templates.get(ep.template)
  other = tmpl.bindings[(tmpl.bindings.index(ep.binding) + 1) % len(tmpl.bindings)]
  # The requested path depends on the goal count only, never on the sender's holdings.
  return PeerRequest(ep.receiver,
                     tmpl.branch(other, ep.sender, ep.receiver, ep.goal_count).receiver_path)


def _ground(rec: Record, c, world=None) -> None:
  """Materialize -> compile -> execute -> verify for a resolved commitment (or a Conflict).

  world(ep) -> a fresh world for the episode; None means the simulator (`ep.layout.reset()`),
  a live runtime passes `LiveRuntime.world_for`."""
  ep = rec.ep
  if isinstance(c, resolve.Conflict):
    rec.result = Fail("RESOLUTION_CONFLICT", c.reason)
    return
  rec.commitment = c
  plan = materialize(c, templates.get(ep.template), ep.layout, ep.goal_count, ep.episode_id)
  if isinstance(plan, MaterializationError):
    rec.result = Fail("MATERIALIZATION_FAILURE", plan.reason)
    return
  try:
    outcome = execute_and_verify(plan, ep.layout.reset() if world is None else world(ep),
                                 ep.terminal)
  except BackendFailure as e:
    rec.result = Fail("SERVER_FAILURE", str(e))
    return
  rec.executor_actions = outcome.actions
  rec.handoff_verified = outcome.handoff_verified
  rec.result = (Success(c, plan) if outcome.status == "SUCCESS"
                else Fail(outcome.status, outcome.detail))


def _sender_outputs(policy, contexts) -> tuple[list, list]:
  """The first sender stage: Short DSL texts and what crossed the boundary on the policy's
  surface (the JSON `req`, a free-form sentence; None: the Short DSL request line itself)."""
  if policy.surface == "dsl":
    return policy.generate(contexts), [None] * len(contexts)
  return prompted.decode_outputs(contexts, policy.generate_raw(contexts), policy.surface)


def _rest_of_sender_path(recs, firsts, policy) -> list:
  """Single-step control: after its first step ran, each sender decides the rest of its path.

  Returns the joined proposals (first step + rest, the first call's request); records that
  fail here get their result set and a None entry."""
  contexts = []
  for rec, q in zip(recs, firsts):
    first = Proposal(q.self_plan[:1], ())
    produced = produces(resolve.normalize_path(first.self_plan, rec.ep.sender)[0]) \
        if first.self_plan else {}
    contexts.append(E.sender_after_step_context(rec.ep, serialize(first), produced))
  joined = []
  for rec, q, text in zip(recs, firsts, policy.generate(contexts)):
    rec.model_calls += policy.learned_calls
    rest = _decode(rec, text, rec.ep.sender)
    if rest is not None and rest.peer_requests:
      rec.result = Fail("CONTRACT_REJECT", "the after-step decision must not request again")
      rest = None
    joined.append(None if rest is None else
                  Proposal(q.self_plan + rest.self_plan, q.peer_requests))
  return joined


def run_forward(episodes, policy: CommitmentPolicy | RawTextPolicy, condition: str = "true",
                horizon: str = "multi", world=None) -> list[Record]:
  """Algorithm S1 over a batch of episodes under a request condition.

  Args:
    episodes: forward episodes (`suites.forward`), one record each.
    policy: a `CommitmentPolicy`; on a surface other than "dsl" also a `RawTextPolicy` (its raw
      sender outputs give the wire payload), and on "freeform" (multi-step) only the latter:
      it runs the multi-turn dialogue, `run_dialogue`.
    condition: true / removed / alternative (see the module docstring).
    horizon: "multi", or "single" for the single-step controller: the sender's first call
      commits only its first step (with the request), a second sender call after that step
      commits the rest, then the receiver is called as usual (three learned stages, not two).
    world: episode -> fresh world; None runs the simulator.
  Returns:
    One `Record` per episode, in order.
  """
  if condition not in FORWARD_CONDITIONS:
    raise ValueError(f"unknown forward condition {condition!r}; valid: {FORWARD_CONDITIONS}")
  if horizon not in ("multi", "single"):
    raise ValueError(f"horizon must be multi or single, got {horizon!r}")
  if policy.surface == "freeform" and horizon == "multi":
    if condition != "true":
      raise ValueError("the free-form dialogue runs under the true request condition only")
    return run_dialogue(episodes, policy, world)
  recs = [Record(ep, condition, policy.name) for ep in episodes]
  texts, wires = _sender_outputs(policy, [E.sender_context(ep, horizon) for ep in episodes])
  firsts = []
  for rec, text, wire in zip(recs, texts, wires):
    rec.model_calls += policy.learned_calls
    q = _decode(rec, text, rec.ep.sender)
    if q is not None and horizon == "single" and len(q.self_plan) != 1:
      rec.result = Fail("CONTRACT_REJECT", "single-step control commits exactly one step")
      q = None
    firsts.append((rec, q, wire))
  if horizon == "single":
    alive = [(r, q, w) for r, q, w in firsts if q is not None]
    joined = _rest_of_sender_path([r for r, _, _ in alive], [q for _, q, _ in alive], policy)
    firsts = [(r, j, w) for (r, _, w), j in zip(alive, joined)]
  stage2, delivered, senders = [], [], []
  for rec, q, wire in firsts:
    if q is None:
      continue
    if not _one_request(q):
      rec.result = Fail("CONTRACT_REJECT", "sender must request exactly one non-empty path")
      continue
    if condition == "alternative":
      q = Proposal(q.self_plan, (_alternative(rec.ep),))
    message = None if condition == "removed" else request_line(q)
    if message is not None:
      payload = wire if (wire is not None and condition == "true") else message
      rec.wire_bytes = len(payload.encode())
    stage2.append(rec)
    delivered.append(message)
    senders.append(q)
  texts = policy.generate([E.receiver_context(r.ep, m) for r, m in zip(stage2, delivered)])
  for rec, q_snd, text in zip(stage2, senders, texts):
    rec.model_calls += policy.learned_calls
    ep = rec.ep
    q_rcv = _decode(rec, text, ep.receiver)
    if q_rcv is None:
      continue
    if not q_rcv.self_plan or q_rcv.peer_requests:
      rec.result = Fail("CONTRACT_REJECT", "receiver must answer with SELF path and REQ -")
      continue
    if condition != "removed":
      rec.receiver_follows_request = (
          resolve.normalize_path(q_rcv.self_plan, ep.receiver) ==
          resolve.normalize_path(q_snd.peer_requests[0].requested_plan, ep.receiver))
    held = ep.inventory(ep.sender)
    if condition == "removed":
      c = resolve.resolve_self_plans(q_snd, q_rcv, ep.sender, ep.receiver, held)
    else:
      c = resolve.resolve_forward(q_snd, q_rcv, ep.sender, ep.receiver, held)
    _ground(rec, c, world)
  return recs


def run_dialogue(episodes, policy: RawTextPolicy, world=None) -> list[Record]:
  """Controlled free-form (agents/gencoord/dialogue.py): turns batched by index across episodes.

  `policy.generate_raw(contexts)` returns the raw turns. Each turn costs the policy's calls
  and, once it decodes, its UTF-8 bytes cross the boundary (wire = all dialogue bytes); an
  undecodable turn ends that dialogue with PARSE_FAILURE. After the last turn the shared
  extractor recovers (sender proposal, receiver commitment), which take the Short DSL route:
  contract check -> resolve -> materialize -> execute -> verify."""
  recs = [Record(ep, "true", policy.name) for ep in episodes]
  turns: list = [[] for _ in recs]
  alive = list(range(len(recs)))
  for k in range(len(dialogue.TWO_ROUNDS)):
    batch = [i for i in alive if k < len(dialogue.schedule(recs[i].ep))]
    if not batch:
      break
    contexts = [dialogue.context(recs[i].ep, dialogue.schedule(recs[i].ep)[k], turns[i])
                for i in batch]
    texts = policy.generate_raw(contexts)
    if len(texts) != len(batch):
      raise ValueError(f"policy returned {len(texts)} turns for {len(batch)} contexts")
    for i, text in zip(batch, texts):
      rec = recs[i]
      rec.model_calls += policy.learned_calls
      rec.texts.append(text)
      try:
        dialogue.decode_turn(text)
      except ParseError as e:
        rec.raw_valid = False
        rec.result = Fail("PARSE_FAILURE", f"turn {k}: {e}")
        alive.remove(i)
        continue
      rec.wire_bytes += len(text.encode())
      turns[i].append(text)
  for i in alive:
    rec, ep = recs[i], recs[i].ep
    try:
      q_snd, q_rcv = dialogue.extract(turns[i])
    except ParseError as e:
      rec.raw_valid = False
      rec.result = Fail("PARSE_FAILURE", f"extraction: {e}")
      continue
    if not valid_proposal(q_snd, ep.sender, ep.public) or not _one_request(q_snd):
      rec.result = Fail("CONTRACT_REJECT", "sender's extracted proposal fails the contract")
      continue
    if not valid_proposal(q_rcv, ep.receiver, ep.public) or not q_rcv.self_plan:
      rec.result = Fail("CONTRACT_REJECT", "receiver's extracted commitment fails the contract")
      continue
    rec.receiver_follows_request = (
        resolve.normalize_path(q_rcv.self_plan, ep.receiver) ==
        resolve.normalize_path(q_snd.peer_requests[0].requested_plan, ep.receiver))
    _ground(rec, resolve.resolve_forward(q_snd, q_rcv, ep.sender, ep.receiver,
                                         ep.inventory(ep.sender)), world)
  return recs


def _direct(rec: Record, q: Proposal, world=None) -> None:
  """Commit a single proposal as is (requester-local and centralized conditions)."""
  ep = rec.ep
  tmpl = templates.get(ep.template)
  b = resolve.proposal_branch(tmpl, q, ep.sender, ep.receiver, ep.goal_count)
  c = resolve.join(resolve.normalize_path(q.self_plan, ep.sender),
                   resolve.normalize_path(q.peer_requests[0].requested_plan, ep.receiver),
                   ep.sender, ep.receiver, "direct", binding=b, held=ep.inventory(ep.sender))
  _ground(rec, c, world)


def run_feedback(episodes, policy: CommitmentPolicy, condition: str = "correct",
                 response_override=None, world=None) -> list[Record]:
  """Algorithm S2 over a batch of Goal x Capability episodes.

  response_override(response, episode) -> response replaces the policy's answer (tests use it
  to inject invalid responses).
  """
  if condition not in FEEDBACK_CONDITIONS:
    raise ValueError(f"unknown feedback condition {condition!r}; valid: {FEEDBACK_CONDITIONS}")
  recs = [Record(ep, condition, policy.name) for ep in episodes]
  if condition == "centralized":
    contexts = [E.centralized_context(ep) for ep in episodes]
    for rec, ctx in zip(recs, contexts):
      views = ctx.observation["views"]
      rec.aggregation_bytes = len(E.json_bytes(views))
  else:
    contexts = [E.requester_context(ep) for ep in episodes]
  texts = policy.generate(contexts)
  stage2, responses, initials = [], [], []
  for rec, text in zip(recs, texts):
    rec.model_calls += policy.learned_calls
    ep = rec.ep
    q0 = _decode(rec, text, ep.sender)
    if q0 is None:
      continue
    if not _one_request(q0):
      rec.result = Fail("CONTRACT_REJECT", "requester must request exactly one non-empty path")
      continue
    rec.wire_bytes = len(request_line(q0).encode())
    if condition in ("local", "centralized"):
      _direct(rec, q0, world)
      continue
    tmpl = templates.get(ep.template)
    args = (tmpl, q0.peer_requests[0], ep.sender, ep.receiver, ep.peer_mode)
    rho = capability.respond(*args, k=ep.goal_count)
    if condition == "counterfactual":
      rho = capability.counterfactual(rho, *args, k=ep.goal_count)
    if response_override is not None:
      rho = response_override(rho, ep)
    if not capability.response_valid(rho):
      rec.result = Fail("CONTRACT_REJECT", f"invalid response {rho!r}")
      continue
    rec.response_bytes = len(rho.wire().encode())
    rec.wire_bytes += rec.response_bytes
    if rho.decision == "REJECT":
      rec.result = NoCommitment(rho.reason)
      continue
    stage2.append(rec)
    responses.append(rho)
    initials.append((q0, text))
  texts = policy.generate([E.requester_context(r.ep, t0, rho.wire())
                           for r, (_, t0), rho in zip(stage2, initials, responses)])
  for rec, (q0, _), rho, text in zip(stage2, initials, responses, texts):
    rec.model_calls += policy.learned_calls
    ep = rec.ep
    q1 = _decode(rec, text, ep.sender)
    if q1 is None:
      continue
    if not _one_request(q1) or q1.peer_requests[0].target != q0.peer_requests[0].target:
      rec.result = Fail("CONTRACT_REJECT", "revision must keep one request to the same peer")
      continue
    c = resolve.resolve_feedback(templates.get(ep.template), q0, rho, q1, ep.sender,
                                 ep.receiver, ep.goal_count, ep.inventory(ep.sender))
    _ground(rec, c, world)
  return recs
