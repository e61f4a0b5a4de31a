"""Short DSL: the two-line, peer-facing text codec of GenCoord proposals.

  SELF resource.obtain(q=8,item=oak_planks) > resource.deliver(q=8,item=oak_planks,to=agent_b)
  REQ agent_b craft.item(bind=WORK_BRANCH,q=1,input=oak_planks,item=crafting_table)

`parse(text) -> Proposal` raises `ParseError` on anything undecodable and never any other
exception (model output is untrusted). `serialize(proposal) -> str` is canonical: two LF-separated
lines, no surrounding whitespace, compact keys in `KEY_ORDER` (other keys after them, sorted),
strings bare when they read back as the same atom and JSON-quoted otherwise.

Parsing is purely syntactic (grammar, skill catalog, alias keys, duplicate keys); typed checks
(required keys, quantities, agents, bindings) live in `contract.py`, as in the paper.
"""
import dataclasses
import functools
import json
import math
import re
from typing import Any, Mapping, Union

Value = Union[str, int, float, bool, None]

SKILLS = (
    "control.wait", "resource.obtain", "resource.deliver", "craft.item",
    "transform.supply_input", "transform.supply_fuel", "transform.collect_output",
    "build.component",
)
_SKILL_SET = frozenset(SKILLS)
MAX_TASKS = 5

# Compact keys in canonical emission order; keys outside this list follow alphabetically.
KEY_ORDER = ("bind", "q", "input", "item", "to", "dst", "site", "from", "dst_role", "loc",
             "station")
_KEY_RANK = {k: i for i, k in enumerate(KEY_ORDER)}
# Expanded compatibility names accepted by the parser, rewritten before any check.
ALIASES = {
    "count": "q", "quantity": "q", "target_agent_ref": "to", "to_agent_id": "to",
    "destination": "dst", "destination_role": "dst_role", "from_agent_id": "from",
    "location_ref": "loc", "binding_id": "bind",
}


class ParseError(ValueError):
  """Raised by `parse` for any string that is not a legal Short DSL program."""


def _key_sort(key: str) -> tuple:
  return (0, _KEY_RANK[key], "") if key in _KEY_RANK else (1, 0, key)


def canonical_args(args: Mapping[str, Value]) -> dict:
  """Alias-free copy of `args` in canonical key order (a colliding alias raises ValueError)."""
  keys = tuple(args)
  if keys in _CANONICAL_KEY_TUPLES:          # hot path: keys already canonical and in order
    return dict(args)
  out: dict[str, Value] = {}
  for key, value in args.items():
    key = ALIASES.get(key, key)
    if key in out:
      raise ValueError(f"duplicate key {key!r} after alias canonicalisation")
    out[key] = value
  ordered = tuple(sorted(out, key=_key_sort))
  if len(_CANONICAL_KEY_TUPLES) < 4096:
    _CANONICAL_KEY_TUPLES.add(ordered)
  return {k: out[k] for k in ordered}


_CANONICAL_KEY_TUPLES: set = set()


@dataclasses.dataclass(frozen=True)
class Task:
  """One skill call with typed arguments; the actor is implicit (set by the enclosing line)."""
  skill: str
  args: Mapping[str, Value] = dataclasses.field(default_factory=dict)

  def __post_init__(self):
    object.__setattr__(self, "args", canonical_args(self.args))

  def __hash__(self):
    return hash((self.skill, tuple((k, type(v).__name__, v) for k, v in self.args.items())))


@dataclasses.dataclass(frozen=True)
class PeerRequest:
  target: str
  requested_plan: tuple[Task, ...]

  def __post_init__(self):
    object.__setattr__(self, "requested_plan", tuple(self.requested_plan))


@dataclasses.dataclass(frozen=True)
class Proposal:
  self_plan: tuple[Task, ...] = ()
  peer_requests: tuple[PeerRequest, ...] = ()

  def __post_init__(self):
    object.__setattr__(self, "self_plan", tuple(self.self_plan))
    object.__setattr__(self, "peer_requests", tuple(self.peer_requests))


# ----------------------------------------------------------------------------------- parsing
_WS = re.compile(r"[ \t\r]*")
_SKILL = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
_KEY = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
_ATOM = re.compile(r"[A-Za-z0-9_.:/+\-]+")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_STRING = re.compile(r'"(?:[^"\\\x00-\x1f]|\\.)*"')
_LITERALS = {"true": True, "false": False, "null": None}
_VALUE_END = frozenset(" \t\r,)")


class _Scanner:
  """Cursor over one line; every helper raises ParseError with the column on failure."""

  def __init__(self, line: str):
    self.s, self.i = line, 0

  def fail(self, what: str):
    raise ParseError(f"{what} at column {self.i}: {self.s!r}")

  def ws(self):
    self.i = _WS.match(self.s, self.i).end()

  def peek(self) -> str:
    return self.s[self.i] if self.i < len(self.s) else ""

  def expect(self, char: str):
    self.ws()
    if self.peek() != char:
      self.fail(f"expected {char!r}")
    self.i += 1

  def match(self, pattern: re.Pattern, what: str) -> str:
    self.ws()
    m = pattern.match(self.s, self.i)
    if not m:
      self.fail(f"expected {what}")
    self.i = m.end()
    return m.group()

  def at_value_end(self, j: int) -> bool:
    return j >= len(self.s) or self.s[j] in _VALUE_END


def _value(sc: _Scanner) -> Value:
  sc.ws()
  if sc.peek() == '"':
    m = _STRING.match(sc.s, sc.i)
    if not m:
      sc.fail("unterminated or invalid JSON string")
    try:
      value = json.loads(m.group())
    except ValueError:
      sc.fail("invalid JSON string escape")
    sc.i = m.end()
    return value
  m = _NUMBER.match(sc.s, sc.i)
  if m and sc.at_value_end(m.end()):
    value = json.loads(m.group())
    if isinstance(value, float) and not math.isfinite(value):
      sc.fail("number out of range")
    sc.i = m.end()
    return value
  m = _ATOM.match(sc.s, sc.i)
  if not m:
    sc.fail("invalid value (not a JSON string, number, literal or atom)")
  sc.i = m.end()
  return _LITERALS.get(m.group(), m.group())


def _task(sc: _Scanner) -> Task:
  skill = sc.match(_SKILL, "skill name")
  if skill not in _SKILL_SET:
    sc.fail(f"skill {skill!r} outside the catalog")
  sc.expect("(")
  args: dict[str, Value] = {}
  sc.ws()
  if sc.peek() == ")":
    sc.i += 1
    return Task(skill, args)
  while True:
    raw_key = sc.match(_KEY, "argument key")
    key = ALIASES.get(raw_key, raw_key)
    if key in args:
      sc.fail(f"duplicate key {key!r}")
    sc.expect("=")
    args[key] = _value(sc)
    sc.ws()
    char = sc.peek()
    sc.i += 1
    if char == ")":
      return Task(skill, args)
    if char != ",":
      sc.i -= 1
      sc.fail("expected ',' or ')'")


# Fast path: a line whose tasks are written without inner whitespace and joined by " > " is
# decoded with two regexes; anything else (or anything the fast path is unsure of) goes through
# the scanner, which is the reference implementation and produces the error messages.
_FAST_VALUE = r'(?:"(?:[^"\\\x00-\x1f]|\\.)*"|[A-Za-z0-9_.:/+\-]+)'
_FAST_ARG = re.compile(r"([A-Za-z][A-Za-z0-9_]*)=(" + _FAST_VALUE + r")")
_FAST_TASK = re.compile(r"([A-Za-z_][A-Za-z0-9_.]*)\(((?:[A-Za-z][A-Za-z0-9_]*=" + _FAST_VALUE +
                        r")(?:,[A-Za-z][A-Za-z0-9_]*=" + _FAST_VALUE + r")*)?\)")
_SLOW = object()


def _fast_value(raw: str):
  if raw.isdigit() and raw.isascii() and (raw[0] != "0" or len(raw) == 1):
    return int(raw)
  try:
    if raw[0] == '"':
      return json.loads(raw)
    if _NUMBER.fullmatch(raw):
      value = json.loads(raw)
      return value if not isinstance(value, float) or math.isfinite(value) else _SLOW
  except ValueError:
    return _SLOW
  return _LITERALS.get(raw, raw)


def _fast_path(text: str):
  """Tasks of a canonically spaced path, or None to defer to the scanner."""
  tasks, pos = [], 0
  while True:
    m = _FAST_TASK.match(text, pos)
    if m is None or m.group(1) not in _SKILL_SET:
      return None
    args: dict = {}
    # The task regex already validated `k=v(,k=v)*`, so findall walks exactly those pairs.
    for raw_key, raw in _FAST_ARG.findall(m.group(2) or ""):
      key = ALIASES.get(raw_key, raw_key)
      v = _fast_value(raw)
      if key in args or v is _SLOW:
        return None
      args[key] = v
    tasks.append(Task(m.group(1), args))
    pos = m.end()
    if pos == len(text):
      return tuple(tasks) if len(tasks) <= MAX_TASKS else None
    if not text.startswith(" > ", pos):
      return None
    pos += 3


FAST_PATH = True      # benchmarks switch it off to measure the scanner-only baseline


def _path(sc: _Scanner) -> tuple[Task, ...]:
  fast = (_fast_path(sc.s[sc.i:]) if FAST_PATH and sc.i < len(sc.s) and sc.s[sc.i] != " "
          else None)
  if fast is not None:
    sc.i = len(sc.s)
    return fast
  tasks = [_task(sc)]
  while True:
    sc.ws()
    if sc.peek() != ">":
      break
    sc.i += 1
    tasks.append(_task(sc))
    if len(tasks) > MAX_TASKS:
      sc.fail(f"more than {MAX_TASKS} tasks in a path")
  sc.ws()
  if sc.i != len(sc.s):
    sc.fail("trailing text")
  return tuple(tasks)


def _fast_lines(self_line: str, req_line: str) -> Proposal | None:
  """Canonically spaced two-line programs without the scanner (None: use the scanner)."""
  if not (self_line.startswith("SELF ") and req_line.startswith("REQ ")):
    return None
  rest = self_line[5:]
  if rest == "-":
    self_plan: tuple = ()
  else:
    self_plan = _fast_path(rest) if rest[:1] not in ("", " ", "-") else None
    if self_plan is None:
      return None
  rest = req_line[4:]
  if rest == "-":
    return Proposal(self_plan, ())
  target, _, path = rest.partition(" ")
  if not _ATOM.fullmatch(target) or path[:1] in ("", " "):
    return None
  plan = _fast_path(path)
  return None if plan is None else Proposal(self_plan, (PeerRequest(target, plan),))


def _keyword(sc: _Scanner, word: str) -> None:
  sc.ws()
  if not sc.s.startswith(word, sc.i):
    sc.fail(f"expected {word!r} line")
  sc.i += len(word)
  if sc.i < len(sc.s) and sc.s[sc.i] not in " \t":
    sc.fail(f"expected whitespace after {word!r}")


def _dash_or_end(sc: _Scanner) -> bool:
  """True if the rest of the line is exactly '-' (the empty marker)."""
  sc.ws()
  if sc.peek() == "-" and _WS.match(sc.s, sc.i + 1).end() == len(sc.s):
    sc.i = len(sc.s)
    return True
  return False


def parse(text: Any) -> Proposal:
  """Decodes a Short DSL program; raises ParseError (and only ParseError) when it is illegal."""
  try:
    return _parse(text)
  except ParseError:
    raise
  except Exception as e:  # defensive: the contract is "ParseError or a Proposal", always
    raise ParseError(f"undecodable input ({type(e).__name__}: {e})") from None


def _parse(text: Any) -> Proposal:
  if not isinstance(text, str):
    raise ParseError(f"expected str, got {type(text).__name__}")
  lines = text.strip(" \t\r\n").split("\n")
  if len(lines) != 2:
    raise ParseError(f"expected exactly two lines (SELF, REQ), got {len(lines)}")
  if FAST_PATH:
    fast = _fast_lines(lines[0], lines[1])
    if fast is not None:
      return fast
  self_sc, req_sc = _Scanner(lines[0]), _Scanner(lines[1])
  _keyword(self_sc, "SELF")
  if _dash_or_end(self_sc):
    self_plan: tuple[Task, ...] = ()
  else:
    if self_sc.i == len(self_sc.s):
      self_sc.fail("empty SELF line (use 'SELF -')")
    self_plan = _path(self_sc)
  _keyword(req_sc, "REQ")
  if _dash_or_end(req_sc):
    return Proposal(self_plan, ())
  target = req_sc.match(_ATOM, "request target agent")
  req_sc.ws()
  if req_sc.i == len(req_sc.s):
    req_sc.fail("empty requested plan")
  return Proposal(self_plan, (PeerRequest(target, _path(req_sc)),))


# ------------------------------------------------------------------------------ serializing
@functools.lru_cache(maxsize=8192)
def _is_bare(value: str) -> bool:
  # Bare only when re-parsing yields the same string: a valid atom that reads as neither a
  # complete JSON number nor a literal.
  return (_ATOM.fullmatch(value) is not None and _NUMBER.fullmatch(value) is None
          and value not in _LITERALS)


def serialize_value(value: Value) -> str:
  if value is None or isinstance(value, bool):
    return "null" if value is None else ("true" if value else "false")
  if isinstance(value, int):
    return str(value)
  if isinstance(value, float):
    if not math.isfinite(value):
      raise ValueError(f"non-finite number {value!r} has no Short DSL form")
    return json.dumps(value)
  if isinstance(value, str):
    return value if _is_bare(value) else json.dumps(value, ensure_ascii=True)
  raise TypeError(f"unsupported Short DSL value {value!r}")


def serialize_task(task: Task) -> str:
  body = ",".join(f"{k}={serialize_value(v)}" for k, v in canonical_args(task.args).items())
  return f"{task.skill}({body})"


def serialize_path(tasks) -> str:
  return " > ".join(serialize_task(t) for t in tasks)


def serialize(proposal: Proposal) -> str:
  """Canonical two-line form; at most one peer request fits the grammar."""
  if len(proposal.peer_requests) > 1:
    raise ValueError("Short DSL carries at most one peer request")
  self_line = "SELF " + (serialize_path(proposal.self_plan) if proposal.self_plan else "-")
  if not proposal.peer_requests:
    return self_line + "\nREQ -"
  req = proposal.peer_requests[0]
  if not req.requested_plan:
    raise ValueError("a peer request needs a non-empty requested plan")
  if not _is_bare(req.target):
    raise ValueError(f"request target {req.target!r} is not a valid atom")
  return f"{self_line}\nREQ {req.target} {serialize_path(req.requested_plan)}"


def request_line(proposal: Proposal) -> str:
  """The wire payload of the peer request: the canonical second line of `serialize`."""
  if not proposal.peer_requests:
    return "REQ -"
  return serialize(Proposal((), proposal.peer_requests)).split("\n", 1)[1]
