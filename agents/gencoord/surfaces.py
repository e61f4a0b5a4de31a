"""Alternative communication surfaces for the same canonical proposal fields.

- `json`: the proposal as compact JSON ({"self": [...], "req": {"target", "plan"} | null}).
- `freeform`: controlled natural-language sentences, one clause per task, and the shared
  extractor `decode_freeform` that recovers the Proposal from them (one proposal or commitment
  turn; `dialogue.py` builds the multi-turn free-form exchange from these turns).
Factor codes (the binding id alone) need the public composer: `policies/prompted.py`.
Every decoder raises `ParseError` on undecodable text, like `dsl.parse`.
"""
import json
import re

from agents.gencoord.dsl import ParseError, PeerRequest, Proposal, Task
from agents.gencoord.skills import defaults

SURFACES = ("dsl", "json", "freeform", "factor")


# ------------------------------------------------------------------------------------ JSON
def _task_json(t: Task) -> dict:
  return {"skill": t.skill, "args": dict(t.args)}


def encode_json(q: Proposal) -> str:
  req = None
  if q.peer_requests:
    r = q.peer_requests[0]
    req = {"target": r.target, "plan": [_task_json(t) for t in r.requested_plan]}
  body = {"self": [_task_json(t) for t in q.self_plan], "req": req}
  return json.dumps(body, separators=(",", ":"))


def decode_json(text: str) -> Proposal:
  try:
    body = json.loads(text)
    tasks = lambda xs: tuple(Task(x["skill"], dict(x["args"])) for x in xs)  # noqa: E731
    req = body["req"]
    reqs = () if req is None else (PeerRequest(str(req["target"]), tasks(req["plan"])),)
    if reqs and not reqs[0].requested_plan:
      raise ParseError("empty requested plan")
    return Proposal(tasks(body["self"]), reqs)
  except ParseError:
    raise
  except Exception as e:  # any malformed structure is a parse failure of this surface
    raise ParseError(f"undecodable JSON proposal: {type(e).__name__}: {e}") from None


# ------------------------------------------------------------------------------- free form
_PHRASES = {   # skill -> (sentence template, fields it consumes)
    "resource.obtain": "obtain {q} {item}",
    "resource.deliver/to": "give {q} {item} to {to}",
    "resource.deliver/dst": "put {q} {item} into {dst}",
    "craft.item": "craft {q} {item} from {input}",
    "craft.item/station": "craft {q} {item} from {input} at {station}",
    "build.component": "build the {component} at {site} with {q} {item}",
    "transform.supply_input": "load {q} {item} into {station}",
    "transform.supply_fuel": "fuel {station} with {q} {item}",
    "transform.collect_output": "collect {q} {item} from {station}",
    "control.wait": "wait {ticks} ticks",
}
_W = r"([A-Za-z0-9_.:/+\-]+)"
_PATTERNS = [(key, re.compile("^" + re.sub(r"\\{(\w+)\\}", lambda m: f"(?P<{m.group(1)}>" +
                                           _W[1:], re.escape(tpl)) + r"(?: \(branch (?P<bind>"
                              + _W[1:] + r"\))?$"))
             for key, tpl in _PHRASES.items()]


def _phrase_key(t: Task) -> str:
  if t.skill == "resource.deliver":
    return "resource.deliver/to" if "to" in t.args else "resource.deliver/dst"
  if t.skill == "craft.item" and "station" in t.args:
    return "craft.item/station"
  return t.skill


def _clause(t: Task) -> str:
  args = defaults(t.skill, dict(t.args))
  text = _PHRASES[_phrase_key(Task(t.skill, args))].format(**args)
  return text + (f" (branch {args['bind']})" if "bind" in args else "")


def clauses(tasks) -> str:
  """A path as controlled clauses: "obtain 4 cobblestone, then give 4 cobblestone to agent_b"."""
  return ", then ".join(_clause(t) for t in tasks)


def decode_clauses(text: str) -> tuple:
  """Inverse of `clauses` (ParseError on any clause no task phrase matches)."""
  return tuple(_decode_clause(c) for c in text.split(", then "))


def encode_freeform(q: Proposal) -> str:
  out = f"I will {clauses(q.self_plan) if q.self_plan else 'nothing'}."
  if q.peer_requests:
    r = q.peer_requests[0]
    out += f" {r.target}, please {clauses(r.requested_plan)}."
  else:
    out += " I request nothing."
  return out


def _decode_clause(clause: str) -> Task:
  for key, pattern in _PATTERNS:
    m = pattern.match(clause)
    if m:
      args = {k: (int(v) if k in ("q", "ticks") and v.isdigit() else v)
              for k, v in m.groupdict().items() if v is not None}
      return Task(key.split("/")[0], args)
  raise ParseError(f"no task phrase matches {clause!r}")


def decode_freeform(text: str) -> Proposal:
  """Shared extractor: controlled free-form sentences -> Proposal (ParseError otherwise)."""
  if not isinstance(text, str):
    raise ParseError("expected str")
  m = re.fullmatch(r"I will (.+?)\.(?: I request nothing\.| ([A-Za-z0-9_.:/+\-]+), please "
                   r"(.+)\.)", text.strip())
  if not m:
    raise ParseError("free-form text does not follow the controlled sentence frame")
  mine = () if m.group(1) == "nothing" else decode_clauses(m.group(1))
  if m.group(2) is None:
    return Proposal(mine, ())
  return Proposal(mine, (PeerRequest(m.group(2), decode_clauses(m.group(3))),))


ENCODERS = {"json": encode_json, "freeform": encode_freeform}
DECODERS = {"json": decode_json, "freeform": decode_freeform}
