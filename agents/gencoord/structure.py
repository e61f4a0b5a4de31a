"""Public task structure G of the shared prior and its three visibility projections.

`dag(template)` lists every admissible branch as typed nodes (role, skill, fields) with a
coarse stage (prefix / handoff / suffix) and predecessor lists (role-local order plus the
handoff edge). Views (Section S9): `full` keeps nodes, stages and predecessors; `skeleton`
drops predecessors and edges but keeps stages; `node_only` drops stages too and lists the nodes
in a stable answer-independent order (sorted by their own text).

Roles are the abstract `snd` / `rcv` unless `roles=(sender_name, receiver_name)` binds them: an
agent knows its own role and its peer, so its prompt shows the structure from its own point of
view (`agent_a:resource.deliver(...,to=agent_b)`), which puts the names a commitment must carry
next to the steps it copies them into.
"""
import functools

from agents.gencoord import templates
from agents.gencoord.dsl import serialize_task

VIEWS = ("full", "skeleton", "node_only")
_SND, _RCV = "snd", "rcv"
MAX_LISTED_BRANCHES = 8        # factorised templates list their factors instead of branches


@functools.lru_cache(maxsize=None)
def dag(template_name: str, roles: tuple = (_SND, _RCV)) -> tuple:
  """Nodes: (node_id, branch, role, task text, stage, preds); roles = (sender, receiver) names."""
  tmpl = templates.get(template_name)
  snd, rcv = roles
  nodes = []
  for b in tmpl.bindings:
    br = tmpl.branch(b, snd, rcv, 1)
    hand = next((k for k, t in enumerate(br.sender_path) if "to" in t.args),
                len(br.sender_path) - 1)
    for k, t in enumerate(br.sender_path):
      stage = "prefix" if k < hand else "handoff" if k == hand else "post_handoff_self"
      preds = (f"{b}:S{k - 1}",) if k else ()
      nodes.append((f"{b}:S{k}", b, snd, serialize_task(t), stage, preds))
    for k, t in enumerate(br.receiver_path):
      preds = (f"{b}:R{k - 1}",) if k else (f"{b}:S{hand}",)
      nodes.append((f"{b}:R{k}", b, rcv, serialize_task(t), "suffix", preds))
  return tuple(nodes)


@functools.lru_cache(maxsize=None)
def render(template_name: str, view: str = "full", roles: tuple = (_SND, _RCV)) -> str:
  if view not in VIEWS:
    raise ValueError(f"unknown view {view!r}; valid: {VIEWS}")
  tmpl = templates.get(template_name)
  if len(tmpl.bindings) > MAX_LISTED_BRANCHES:
    return f"factorised branches over ({tmpl.changed_field}); codebook of {len(tmpl.bindings)}"
  nodes = dag(template_name, tuple(roles))
  if view == "full":
    parts = [f"{nid}[{stage}] {role}:{text} <- {','.join(preds) or '-'}"
             for nid, _, role, text, stage, preds in nodes]
  elif view == "skeleton":
    parts = [f"{b}[{stage}] {role}:{text}" for _, b, role, text, stage, _ in nodes]
  else:
    parts = sorted(f"{role}:{text}" for _, _, role, text, _, _ in nodes)
  return " | ".join(parts)
