"""Goal x Capability diagnostic: a requester-local goal and a peer-local workcell mode.

The requester knows the order (crafting tables or sticks into `order_chest`, GOALS per order
times the world's goal count); only the peer knows
whether its workcell is a RAW_PROCESSOR (takes planks and crafts) or a FINISHED_RECEIVER (cannot
transform, only takes the finished item). The two branches move the inter-agent cut:
PEER_CRAFTS hands off planks, REQUESTER_CRAFTS hands off the finished item. The requester's
view and initial proposal are identical across the two modes (the paired local ambiguity).

`respond` is the transparent bounded response policy (no model call): ACCEPT, REJECT(reason)
or COUNTER(counter_offer_id); `response_valid` is its contract (Table S3).
"""
import dataclasses
import json

from agents.gencoord import templates
from agents.gencoord.skills import normalize_path, task
from envs.minecraft import recipes
from envs.minecraft.predicates import ChestHolds

GOALS = {"crafting_table": 1, "stick": 4}         # goal item -> count per order
BRANCHES = ("PEER_CRAFTS", "REQUESTER_CRAFTS")
MODE_BRANCH = {"RAW_PROCESSOR": "PEER_CRAFTS", "FINISHED_RECEIVER": "REQUESTER_CRAFTS"}
COUNTER_OFFERS = {"CRAFT_AT_REQUESTER_HANDOFF_FINISHED": "REQUESTER_CRAFTS",
                  "CRAFT_AT_PEER_HANDOFF_RAW": "PEER_CRAFTS"}
DECISIONS = ("ACCEPT", "REJECT", "COUNTER")


def _compose(goal_item, b, req, peer, k):
  count = GOALS[goal_item] * k
  planks = recipes.raw_needed(goal_item, count)["oak_planks"]
  craft = dict(q=count, input="oak_planks", item=goal_item)
  deposit = task("resource.deliver", q=count, item=goal_item, dst="order_chest")
  if b == "PEER_CRAFTS":
    sender = (task("resource.obtain", q=planks, item="oak_planks"),
              task("resource.deliver", q=planks, item="oak_planks", to=peer))
    receiver = (task("craft.item", **craft), deposit)
  else:
    sender = (task("resource.obtain", q=planks, item="oak_planks"), task("craft.item", **craft),
              task("resource.deliver", q=count, item=goal_item, to=peer))
    receiver = (deposit,)
  return templates.Branch(sender, receiver, (ChestHolds("order_chest", goal_item, count),))


for _goal in GOALS:
  templates.register(templates.Template(
      f"capability_{_goal}", "goal_capability", f"Goal x Capability ({_goal})", "oak_planks",
      BRANCHES, "craft actor; handoff item; peer suffix",
      (lambda g: lambda b, s, r, k: _compose(g, b, s, r, k))(_goal)))


@dataclasses.dataclass(frozen=True)
class Response:
  decision: str
  reason: str
  counter_offer_id: str | None = None

  def wire(self) -> str:
    """Canonical JSON payload sent back to the requester (its UTF-8 length is the wire cost)."""
    body = {"decision": self.decision, "reason": self.reason}
    if self.counter_offer_id is not None:
      body["counter_offer_id"] = self.counter_offer_id
    return json.dumps(body, separators=(",", ":"))


def requested_branch(template: templates.Template, request, req: str, peer: str, k: int = 1):
  """B(q): which public branch a peer request asks for at goal count k (None: none)."""
  got = normalize_path(request.requested_plan, peer)
  for b in template.bindings:
    if normalize_path(template.branch(b, req, peer, k).receiver_path, peer) == got:
      return b
  return None


def respond(template: templates.Template, request, req: str, peer: str, mode: str,
            k: int = 1) -> Response:
  """The peer's transparent capability policy over its private workcell mode (the goal count
  k is in the peer's observation too)."""
  asked = requested_branch(template, request, req, peer, k)
  feasible = MODE_BRANCH.get(mode)
  if asked is None or feasible is None:
    return Response("REJECT", "NO_ADMISSIBLE_BRANCH")
  if asked == feasible:
    return Response("ACCEPT", "LOCAL_WORKCELL_CAN_PROCESS" if mode == "RAW_PROCESSOR"
                    else "FINISHED_ITEM_RECEIVABLE")
  alt = next(a for a, b in COUNTER_OFFERS.items() if b == feasible)
  reason = ("RAW_PROCESSING_BLOCKED" if mode == "FINISHED_RECEIVER"
            else "RAW_HANDOFF_REQUIRED")
  return Response("COUNTER", reason, alt)


def response_valid(response) -> bool:
  """Finite response schema: decision, reason, and a counter id exactly when countering."""
  if not isinstance(response, Response) or response.decision not in DECISIONS:
    return False
  if not isinstance(response.reason, str) or not response.reason:
    return False
  if response.decision == "COUNTER":
    return response.counter_offer_id in COUNTER_OFFERS
  return response.counter_offer_id is None


def counterfactual(response: Response, template, request, req, peer, mode: str,
                   k: int = 1) -> Response:
  """The response the paired workcell mode would have produced for the same request."""
  del response
  other = "FINISHED_RECEIVER" if mode == "RAW_PROCESSOR" else "RAW_PROCESSOR"
  return respond(template, request, req, peer, other, k)


def branch_of_response(response: Response, initial_branch: str):
  """B_resp: Accept keeps the initial branch, Counter selects its alternative, Reject none."""
  if response.decision == "ACCEPT":
    return initial_branch
  if response.decision == "COUNTER":
    return COUNTER_OFFERS.get(response.counter_offer_id)
  return None


def handoff_fields(branch: templates.Branch) -> dict:
  """Craft actor / handoff item / handoff count / peer suffix of a composed branch (Table S19)."""
  hand = branch.sender_path[-1]
  crafts_self = any(t.skill == "craft.item" for t in branch.sender_path)
  return {"craft_actor": "requester" if crafts_self else "peer",
          "handoff_item": hand.args["item"], "handoff_count": hand.args["q"],
          "peer_suffix": tuple(t.skill for t in branch.receiver_path)}
