"""Model-free commitment backends (zero learned calls unless they stand in for a model).

- `program`: the programmatic direct-DSL reference (what the data builder's targets say): the
  sender writes its full SELF+REQ for its private binding; the receiver copies the delivered
  requested path into its SELF; the requester follows the response. It stands in for a
  perfectly trained model, so it is charged one learned call per generation.
- `rule_minimal_request`: forwards the sender's private binding; the public composer expands
  the binding code into both role-local paths (the receiver re-composes from `bind=`).
- `explicit_factor`: composes field by field from canonical factors (oracle factors).
- `factorized_rule`: the binding code composed over the episode's *visible* task structure
  (Full / Skeleton / Node-only view) instead of the template (visibility study, S9).
- `case_table`: complete-case lookup of training targets; an unseen case yields no proposal.
- `tfidf_nn`: nearest training context under TF-IDF cosine similarity, then the composer.
- `frozen_parser` / `surface_table` / `oracle_factors`: naturalized-fact references (S8.1):
  keyword rule fitted on training notes, exact note lookup, and the true binding.
With no delivered request a receiver falls back to the first branch of the public codebook.
"""
import collections
import json
import math
import re

import numpy as np

from agents.gencoord import backends, capability, crossproduct, templates
from agents.gencoord.backends import NO_PROPOSAL
from agents.gencoord.dsl import ParseError, PeerRequest, Proposal, Task, parse, serialize
from agents.gencoord.prompt import render


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


def _proposal(branch: templates.Branch, peer: str) -> str:
  return serialize(Proposal(branch.sender_path, (PeerRequest(peer, branch.receiver_path),)))


def _self_only(path) -> str:
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


class _Composer:
  """Shared stage logic: subclasses decide how the sender's binding is obtained."""
  name = "composer"
  learned_calls = 0

  def generate(self, contexts):
    return [self._one(c) for c in contexts]

  def sender_binding(self, ctx) -> str | None:
    return ctx.observation.get("active_binding")

  def _branch(self, ctx, binding, sender, receiver):
    return templates.get(ctx.observation["template"]).branch(binding, sender, receiver,
                                                             ctx.observation["scale"])

  def _text(self, ctx, binding, sender, receiver, kind) -> str:
    """Serialised proposal (kind="proposal") or receiver SELF (kind="receiver"), memoised on
    the public key that fully determines it."""
    key = (type(self).__name__, ctx.observation["template"], binding, sender, receiver,
           ctx.observation["scale"], kind, ctx.prior.get("view"))

    def make():
      branch = self._branch(ctx, binding, sender, receiver)
      if kind == "proposal":
        return _proposal(branch, receiver)
      if kind == "first_step":            # single-step control: first task + the request
        return serialize(Proposal(branch.sender_path[:1],
                                  (PeerRequest(receiver, branch.receiver_path),)))
      if kind == "rest":
        return _self_only(branch.sender_path[1:])
      return _self_only(branch.receiver_path)
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
      asked = capability.requested_branch(tmpl, initial.peer_requests[0], ctx.agent, ctx.peer)
      body = json.loads(ctx.incoming)
      response = capability.Response(body.get("decision"), body.get("reason"),
                                     body.get("counter_offer_id"))
      b = capability.branch_of_response(response, asked)
      return NO_PROPOSAL if b is None else _proposal(
          self._branch(ctx, b, ctx.agent, ctx.peer), ctx.peer)
    if stage == "centralized":
      mode = ctx.observation["views"][ctx.peer].get("workcell_mode")
      b = capability.MODE_BRANCH.get(mode, ctx.prior["codebook"][0])
      return self._text(ctx, b, ctx.agent, ctx.peer, "proposal")
    raise ValueError(f"{self.name} has no policy for stage {stage!r}")

  def receiver(self, ctx) -> str:
    request = incoming_request(ctx.incoming)
    b = _bind_of(request) if request is not None else ctx.prior["codebook"][0]
    if b is None or b not in ctx.prior["codebook"]:
      return NO_PROPOSAL
    return self._text(ctx, b, ctx.peer, ctx.agent, "receiver")


class ProgramBackend(_Composer):
  name = "program"
  learned_calls = 1

  def receiver(self, ctx) -> str:
    request = incoming_request(ctx.incoming)
    if request is None:
      if ctx.incoming:
        return NO_PROPOSAL
      return super().receiver(ctx)
    return _self_only(request.requested_plan)


class RuleMinimalRequest(_Composer):
  name = "rule_minimal_request"


class ExplicitFactorComposer(_Composer):
  """Builds the branch from canonical factor fields (cross-product suite) or the binding."""
  name = "explicit_factor"

  def sender_binding(self, ctx):
    f = ctx.observation.get("factors")
    if f is None:
      return ctx.observation.get("active_binding")
    return "+".join((f["recipe"], f["destination"], f["actor"], f["multiplier"]))

  def _branch(self, ctx, binding, sender, receiver):
    if ctx.observation["template"] == crossproduct.TEMPLATE.name:
      return crossproduct.compose_factors(*crossproduct.factors(binding), sender, receiver,
                                          binding)
    return super()._branch(ctx, binding, sender, receiver)


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


class FactorizedRule(_Composer):
  """Factorized symbolic rule over the *visible* task structure (visibility study, S9).

  The binding code comes from the private fact (sender) or the request's `bind=` (receiver);
  the paths are composed only from the episode's structure view, never from the template:
    full       the branch's nodes in topological order of the predecessor lists;
    skeleton   the branch's nodes ordered by coarse stage, then the fixed task-path priority;
    node_only  no branch labels: the role's nodes, the one marked `bind=<code>` where a slot
               has alternatives, else the first listed (answer-independent), in the fixed
               task-path priority.
  Quantities in the structure are at scale 1 and scale linearly with the episode's scale."""
  name = "factorized_rule"

  def _branch(self, ctx, binding, sender, receiver):
    from agents.gencoord import structure
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
        args["q"] *= ctx.observation["scale"]
      nodes.append(dict(b=b, stage=stage, role=role, task=Task(t.skill, args), preds=preds,
                        full_id=part.split("[", 1)[0]))
    snd, rcv = self._path(nodes, view, binding, "snd"), self._path(nodes, view, binding, "rcv")
    if not snd or not rcv:
      raise _NothingVisible(f"no {binding} path in the {view} view")
    return templates.Branch(snd, rcv, ())

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


def case_key(ctx) -> tuple:
  """A complete case: stage, template, scale, the private facts and the incoming message,
  with agent names replaced by roles so role permutations share a case."""
  obs = {k: v for k, v in ctx.observation.items() if k != "inventory"}
  text = json.dumps(obs, sort_keys=True, default=list) + "|" + (ctx.incoming or "")
  text = text.replace(ctx.agent, "<self>").replace(ctx.peer, "<peer>")
  return ctx.stage, text


class CaseTable:
  """Complete-case lookup table over training (context, target) rows."""
  name = "case_table"
  learned_calls = 0

  def __init__(self, rows=()):
    self.table = {}
    for ctx, target in rows:
      self.table[case_key(ctx)] = target.replace(ctx.agent, "<self>").replace(ctx.peer,
                                                                                "<peer>")

  def generate(self, contexts):
    out = []
    for ctx in contexts:
      hit = self.table.get(case_key(ctx))
      out.append(NO_PROPOSAL if hit is None else
                 hit.replace("<self>", ctx.agent).replace("<peer>", ctx.peer))
    return out


_TOKEN = re.compile(r"[A-Za-z0-9_]+")


class TfidfNearest(_Composer):
  """Nearest training context (TF-IDF cosine over rendered prompts) -> its binding."""
  name = "tfidf_nn"

  def __init__(self, rows=()):
    rows = list(rows)          # (context, binding) pairs of sender-stage training rows
    self.bindings = [b for _, b in rows]
    self.templates = np.array([c.observation["template"] for c, _ in rows])
    docs = [collections.Counter(_TOKEN.findall(render(c))) for c, _ in rows]
    vocab = sorted({w for d in docs for w in d})
    self.index = {w: i for i, w in enumerate(vocab)}
    df = np.zeros(len(vocab))
    for d in docs:
      for w in d:
        df[self.index[w]] += 1
    self.idf = np.log((1 + len(docs)) / (1 + df)) + 1.0
    self.matrix = np.stack([self._vec(d) for d in docs]) if docs else np.zeros((0, len(vocab)))

  def _vec(self, counts) -> np.ndarray:
    v = np.zeros(len(self.index))
    for w, n in counts.items():
      if w in self.index:
        v[self.index[w]] = (1 + math.log(n)) * self.idf[self.index[w]]
    norm = np.linalg.norm(v)
    return v / norm if norm else v

  def sender_binding(self, ctx):
    if not len(self.bindings):
      return None
    scores = self.matrix @ self._vec(collections.Counter(_TOKEN.findall(render(ctx))))
    # Only neighbours of the same public template name an admissible branch.
    scores = np.where(self.templates == ctx.observation["template"], scores, -np.inf)
    return self.bindings[int(np.argmax(scores))] if np.isfinite(scores.max()) else None


def _words(text: str) -> set:
  return set(_TOKEN.findall(text.lower()))


class FrozenFactorParser(_Composer):
  """Keyword rule fitted once on training notes: words seen with exactly one binding of a
  template vote for it; no vote (unseen wording) gives no proposal."""
  name = "frozen_parser"

  def __init__(self, rows=()):
    seen: dict = {}
    for ctx, b in rows:        # (sender context with a private note, binding)
      seen.setdefault(ctx.observation["template"], {}).setdefault(b, set()).update(
          _words(ctx.observation.get("private_note", "")))
    self.keywords = {t: {b: w - set().union(*(o for c, o in per.items() if c != b))
                         for b, w in per.items()} for t, per in seen.items()}

  def sender_binding(self, ctx):
    words = _words(ctx.observation.get("private_note", ""))
    votes = {b: len(words & kw)
             for b, kw in self.keywords.get(ctx.observation["template"], {}).items()}
    best = max(votes.values(), default=0)
    winners = [b for b, v in votes.items() if v == best]
    return winners[0] if best > 0 and len(winners) == 1 else None


class SurfaceTable(_Composer):
  """Complete surface table: the exact training note string -> its binding."""
  name = "surface_table"

  def __init__(self, rows=()):
    self.table = {(c.observation["template"], c.observation.get("private_note")): b
                  for c, b in rows}

  def sender_binding(self, ctx):
    return self.table.get((ctx.observation["template"], ctx.observation.get("private_note")))


class OracleFactors(ExplicitFactorComposer):
  """Receives the true binding (canonical factors) from outside the agent's view."""
  name = "oracle_factors"

  def __init__(self, truth=None):
    self.truth = dict(truth or {})

  def sender_binding(self, ctx):
    return self.truth.get(ctx.episode_id)


backends.register("program", ProgramBackend)
backends.register("rule_minimal_request", RuleMinimalRequest)
backends.register("explicit_factor", ExplicitFactorComposer)
backends.register("factorized_rule", FactorizedRule)
backends.register("oracle_factors", OracleFactors)
backends.register("frozen_parser", FrozenFactorParser)
backends.register("surface_table", SurfaceTable)
backends.register("case_table", CaseTable)
backends.register("tfidf_nn", TfidfNearest)
