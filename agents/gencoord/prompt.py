"""Deterministic text rendering of a `LocalContext` (the prompt a learned policy reads).

Sections: stage, decision agent and peer, local observation (private facts included only when
they are in this agent's observation), history, incoming message and the shared prior. The
same rendering feeds the data builder, the TF-IDF neighbour rule and learned policies.
"""
import json

from agents.gencoord import structure
from agents.gencoord.episode import LocalContext

_INSTRUCTIONS = {
    "sender_initial": "Write your own skill path and the path you request from the peer.",
    "receiver_after_request": "Write the downstream path you commit to; request nothing.",
    "requester_initial": "Write your own skill path and the path you request from the peer.",
    "requester_after_response": "Revise your proposal so it follows the peer's response.",
    "centralized": "Write the joint plan: your path and the peer's path.",
    "sender_after_obtain": "Write the rest of your own path; request nothing.",
    # controlled free-form dialogue, the extra opening round (agents/gencoord/dialogue.py)
    "sender_intent": "Say what you plan to do yourself and ask the peer what it holds.",
    "receiver_query": "Say what you hold and ask what the peer needs.",
}
_SINGLE_STEP_FIRST = "Write only your first local step and the path you request from the peer."


def _compact(x) -> str:
  return json.dumps(x, sort_keys=True, separators=(",", ":"), default=list)


def render(ctx: LocalContext) -> str:
  lines = [f"stage: {ctx.stage}", f"agent: {ctx.agent}", f"peer: {ctx.peer}",
           f"observation: {_compact(dict(ctx.observation))}"]
  for k, h in enumerate(ctx.history):
    lines.append(f"history[{k}]: {h}")
  if ctx.incoming is not None:
    lines.append(f"incoming: {ctx.incoming}")
  prior = dict(ctx.prior)
  lines.append(f"prior: template={prior.get('template')} family={prior.get('family')} "
               f"codebook={','.join(prior.get('codebook', ()))}")
  if prior.get("template"):
    # A receiver's peer is the sender; every other stage decides for the sending side.
    snd, rcv = ((ctx.peer, ctx.agent) if ctx.observation.get("role") == "receiver"
                else (ctx.agent, ctx.peer))
    lines.append("structure: " + structure.render(prior["template"], prior.get("view", "full"),
                                                  roles=(snd, rcv)))
  instruction = _INSTRUCTIONS.get(ctx.stage, "Answer in Short DSL.")
  if ctx.stage == "sender_initial" and prior.get("horizon") == "single":
    instruction = _SINGLE_STEP_FIRST
  lines.append("task: " + instruction)
  return "\n".join(lines)
