"""`factorized_rule`: the binding code composed over the episode's *visible* task structure
(Full / Skeleton / Node-only view, visibility study S9) instead of the template."""
import re

from agents.gencoord import structure, templates
from agents.gencoord.dsl import Task, parse
from agents.gencoord.episode import goal_count, holdings
from agents.gencoord.policies.base import NO_PROPOSAL
from agents.gencoord.policies.composer import Composer

_STAGE_RANK = {"prefix": 0, "handoff": 1, "post_handoff_self": 2, "suffix": 3}
# Fixed task-path priority of the Node-only (and within-stage Skeleton) order.
_PRIORITY = ("resource.obtain", "transform.supply_input", "transform.supply_fuel",
             "transform.collect_output", "craft.item", "build.component", "control.wait",
             "resource.deliver/to", "resource.deliver/dst")
_NODE = {"full": re.compile(r"(\S+):[SR]\d+\[(\w+)\] (\w+):(\S+) <- (\S+)"),
         "skeleton": re.compile(r"(\S+)\[(\w+)\] (\w+):(\S+)"),
         "node_only": re.compile(r"(\w+):(\S+)")}


def _slot(t) -> str:
  if t.skill == "resource.deliver":
    return "resource.deliver/to" if "to" in t.args else "resource.deliver/dst"
  return t.skill


class _NothingVisible(Exception):
  """The structure view shows no composable path for the binding."""


class FactorizedRule(Composer):
  """Factorized symbolic rule over the *visible* task structure (visibility study, S9).

  The binding code comes from the private fact (sender) or the request's `bind=` (receiver);
  the paths are composed only from the episode's structure view, never from the template:
    full       the branch's nodes in topological order of the predecessor lists;
    skeleton   the branch's nodes ordered by coarse stage, then the fixed task-path priority;
    node_only  no branch labels: the role's nodes, the one marked `bind=<code>` where a slot
               has alternatives, else the first listed (answer-independent), in the fixed
               task-path priority.
  Quantities in the structure are per order and scale linearly with the goal count; the
  sender's obtain is then net of its own starting inventory (templates.net_of_holdings)."""
  name = "factorized_rule"

  def _branch(self, ctx, binding, sender, receiver):
    view = ctx.prior.get("view", "full")
    text = structure.render(ctx.observation["template"], view)   # roles snd / rcv
    names = {"snd": sender, "rcv": receiver}
    nodes = []
    for part in text.split(" | "):
      m = _NODE[view].fullmatch(part)
      if m is None:                  # factorised templates list no nodes: nothing to compose
        raise _NothingVisible(text)
      g = m.groups()
      b, stage, role, body, preds = (None, None, *g, "") if view == "node_only" else (
          (*g, "") if view == "skeleton" else g)
      t = parse("SELF " + body + "\nREQ -").self_plan[0]
      args = {key: names.get(v, v) if isinstance(v, str) else v for key, v in t.args.items()}
      if isinstance(args.get("q"), int):
        args["q"] *= goal_count(ctx)
      nodes.append(dict(b=b, stage=stage, role=role, task=Task(t.skill, args), preds=preds,
                        full_id=part.split("[", 1)[0]))
    snd, rcv = self._path(nodes, view, binding, "snd"), self._path(nodes, view, binding, "rcv")
    if not snd or not rcv:
      raise _NothingVisible(f"no {binding} path in the {view} view")
    return templates.net_of_holdings(templates.Branch(snd, rcv, ()), holdings(ctx))

  def _one(self, ctx) -> str:
    try:
      return super()._one(ctx)
    except _NothingVisible:
      return NO_PROPOSAL

  @staticmethod
  def _path(nodes, view, binding, role) -> tuple:
    if view == "node_only":
      chosen: dict = {}
      for n in nodes:
        if n["role"] != role or n["task"].args.get("bind", binding) != binding:
          continue
        slot = _slot(n["task"])
        if slot not in chosen or ("bind" in n["task"].args and
                                  "bind" not in chosen[slot].args):
          chosen[slot] = n["task"]
      return tuple(sorted(chosen.values(), key=lambda t: _PRIORITY.index(_slot(t))))
    mine = [n for n in nodes if n["b"] == binding]
    if view == "skeleton":
      own = [n for n in mine if n["role"] == role]
      return tuple(n["task"] for n in sorted(own, key=lambda n: (
          _STAGE_RANK[n["stage"]], _PRIORITY.index(_slot(n["task"])))))
    done, order = set(), []          # full: Kahn's order over the branch's predecessor lists
    while len(order) < len(mine):
      ready = [n for n in mine if n["full_id"] not in done and all(
          p in done for p in n["preds"].split(",") if p != "-")]
      if not ready:
        return ()                    # a cycle: no executable order
      done.add(ready[0]["full_id"])
      order.append(ready[0])
    return tuple(n["task"] for n in order if n["role"] == role)
