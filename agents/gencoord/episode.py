"""Episodes (one role view of a semantic cluster) and the model-visible local contexts.

`Episode` holds everything the runtime needs: the public instantiation ξ_pub (agents, named
locations, template codebook), the private facts (the sender's active binding, the peer's
workcell mode), the world's instance facts (goal count; the layout carries every agent's sampled
starting inventory, facts.py), the static world layout and the role permutation. Backends never
see an `Episode`: they receive a `LocalContext` holding only what that agent may see.

An agent's observation (`_obs`): its role, the template, the goal count (orders; absent where
the binding code carries the count), its own starting inventory, and for the sender its private
fact (the binding id, or a naturalized note). The named locations are public (ξ_pub) and enter
commitments by name only, so they are not repeated in the observation.
"""
import dataclasses
import functools
import json
from typing import Any, Mapping

from agents.gencoord import naturalize, templates
from envs.minecraft.world import Layout


@dataclasses.dataclass(frozen=True)
class PublicInstance:
  """ξ_pub: what every agent and the checker may know about this episode."""
  agents: tuple
  locations: Mapping[str, str]     # location name -> kind
  template: str
  codebook: tuple                  # admissible binding ids of the template


@dataclasses.dataclass(frozen=True)
class Episode:
  episode_id: str
  cluster_id: str
  suite: str
  template: str
  binding: str                     # the true branch (private to the sender / implied by mode)
  sender: str                      # sender / requester
  receiver: str                    # receiver / peer
  role_view: int                   # 0: agent_a sends, 1: agent_b sends
  goal_count: int                  # orders (1-4); quantities scale with it
  variant: int
  layout: Layout
  peer_mode: str = "GENERAL"       # receiver's private workcell mode
  view: str = "full"               # task-structure visibility: full / skeleton / node_only
  split: str = ""
  private_surface: str = ""        # "": binding id; train/c1/c2/c3: naturalized note

  @functools.cached_property
  def public(self) -> PublicInstance:
    tmpl = templates.get(self.template)
    return PublicInstance(tuple(self.layout.agent_starts),
                          {n: loc.kind for n, loc in self.layout.locations.items()},
                          self.template, tmpl.bindings)

  def branch(self, binding: str | None = None) -> templates.Branch:
    """The canonical branch: goal count k, the sender's obtain net of its starting holdings."""
    return templates.get(self.template).branch(binding or self.binding, self.sender,
                                               self.receiver, self.goal_count,
                                               self.inventory(self.sender))

  @property
  def terminal(self) -> tuple:
    return self.branch().terminal

  def inventory(self, agent: str) -> dict:
    return dict(self.layout.agent_starts[agent][1])


@dataclasses.dataclass(frozen=True)
class LocalContext:
  """Model-visible input x_i: decision agent, observation, history, incoming message, peer,
  shared prior (template name + structure view). `stage` names the learned stage."""
  stage: str                       # sender_initial | receiver_after_request | requester_initial
  agent: str                       # | requester_after_response | centralized
  peer: str
  observation: Mapping[str, Any]
  history: tuple = ()
  incoming: str | None = None
  prior: Mapping[str, Any] = dataclasses.field(default_factory=dict)
  episode_id: str = ""


STAGES = ("sender_initial", "receiver_after_request", "requester_initial",
          "requester_after_response", "centralized", "sender_after_obtain",
          "sender_intent", "receiver_query")


def _prior(ep: Episode, horizon: str = "multi") -> dict:
  tmpl = templates.get(ep.template)
  return {"template": tmpl.name, "family": tmpl.family, "codebook": tmpl.bindings,
          "view": ep.view, "horizon": horizon}


def _count(ep: Episode) -> dict:
  return {"goal_count": ep.goal_count} if templates.get(ep.template).counted else {}


def _obs(ep: Episode, agent: str, role: str, **private) -> dict:
  return {"role": role, "template": ep.template, **_count(ep),
          "inventory": ep.inventory(agent), **private}


# Stages whose output commits the deciding agent's sender path from its starting state.
_FROM_START = ("sender_initial", "sender_intent", "requester_initial",
               "requester_after_response", "centralized")


def goal_count(ctx: LocalContext) -> int:
  """The goal count a context shows (1 for a template whose binding carries the count)."""
  return int(ctx.observation.get("goal_count", 1))


def holdings(ctx: LocalContext) -> dict:
  """The starting inventory the deciding agent's sender path is net of: its own observed
  inventory at the stages that commit that path from the start, else {} (a receiver's path
  and a sender's rest of path after its first step do not depend on it)."""
  if ctx.stage not in _FROM_START:
    return {}
  obs = ctx.observation
  if "views" in obs:
    return dict(obs["views"][ctx.agent]["inventory"])
  return dict(obs.get("inventory", {}))


def _private_factors(ep: Episode) -> dict:
  """Canonical factor fields of a factorised binding (cross-product suite), else nothing."""
  if ep.template != "order_xprod":
    return {}
  recipe, destination, actor, multiplier = ep.binding.split("+")
  return {"factors": {"recipe": recipe, "destination": destination, "actor": actor,
                      "multiplier": multiplier}}


def _private(ep: Episode) -> dict:
  """The sender's private fact: the binding id, or its naturalized description."""
  if ep.private_surface:
    return {"private_note": naturalize.describe(ep.binding, ep.template, ep.private_surface,
                                                ep.variant)}
  return {"active_binding": ep.binding, **_private_factors(ep)}


def sender_context(ep: Episode, horizon: str = "multi") -> LocalContext:
  """horizon="multi": commit the whole SELF path now; "single": commit only the first step."""
  obs = _obs(ep, ep.sender, "sender", **_private(ep))
  return LocalContext("sender_initial", ep.sender, ep.receiver, obs,
                      prior=_prior(ep, horizon), episode_id=ep.episode_id)


def sender_after_step_context(ep: Episode, first_step: str, produced: dict) -> LocalContext:
  """Single-step control: the sender decides its remaining path after its first step ran.

  first_step: its executed first-step record (history); produced: items that step added to
  its inventory (the state transition it observes)."""
  obs = _obs(ep, ep.sender, "sender", **_private(ep))
  inventory = dict(obs["inventory"])
  for item, n in produced.items():
    inventory[item] = inventory.get(item, 0) + n
  obs["inventory"] = inventory
  return LocalContext("sender_after_obtain", ep.sender, ep.receiver, obs,
                      history=(first_step,), prior=_prior(ep, "single"),
                      episode_id=ep.episode_id)


def receiver_context(ep: Episode, incoming: str | None) -> LocalContext:
  obs = _obs(ep, ep.receiver, "receiver")
  return LocalContext("receiver_after_request", ep.receiver, ep.sender, obs,
                      incoming=incoming, prior=_prior(ep), episode_id=ep.episode_id)


def requester_context(ep: Episode, initial: str | None = None,
                      response: str | None = None) -> LocalContext:
  obs = _obs(ep, ep.sender, "requester")
  if initial is None:
    return LocalContext("requester_initial", ep.sender, ep.receiver, obs, prior=_prior(ep),
                        episode_id=ep.episode_id)
  return LocalContext("requester_after_response", ep.sender, ep.receiver, obs,
                      history=(initial,), incoming=response, prior=_prior(ep),
                      episode_id=ep.episode_id)


def centralized_context(ep: Episode) -> LocalContext:
  """Both current local views merged (the centralized full-information reference)."""
  obs = {"role": "central", "template": ep.template, **_count(ep),
         "views": {ep.sender: _obs(ep, ep.sender, "requester"),
                   ep.receiver: _obs(ep, ep.receiver, "peer", workcell_mode=ep.peer_mode)}}
  return LocalContext("centralized", ep.sender, ep.receiver, obs, prior=_prior(ep),
                      episode_id=ep.episode_id)


def json_bytes(x) -> bytes:
  """Canonical UTF-8 JSON payload (used to count state-aggregation bytes)."""
  return json.dumps(x, sort_keys=True, separators=(",", ":"), default=list).encode()
