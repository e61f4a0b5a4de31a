"""Tolerant extraction from model replies: assertion JSON, actions, sub-goals, sub-goal status.

Replies are expected as tagged sections (`<state>{...}</state>`, `<action>...</action>`,
`<subgoal>...</subgoal>`, `<status>done|failed|ongoing</status>`), but models drift: missing
closing tags, ```json fences instead of tags, single quotes, Python literals, trailing commas,
tuples written as "(3, 4)". The parser recovers those; whatever it still cannot read is reported
(`found=False`, `invalid` fields) rather than guessed.
"""
import ast
import dataclasses
import json
import re
from typing import Any, Sequence

from agents.conpact import schemas


def extract_tag(text: str, tag: str) -> str | None:
  """Content of the LAST <tag>...</tag> (case-insensitive); an unclosed final tag runs to the end."""
  closed = re.findall(rf"<{tag}>(.*?)</{tag}>", text, flags=re.S | re.I)
  if closed:
    return closed[-1].strip()
  m = list(re.finditer(rf"<{tag}>", text, flags=re.I))
  if m:
    return text[m[-1].end():].strip()
  return None


def _balanced_objects(text: str) -> list[str]:
  """Every top-level {...} span (brace matching, ignoring braces inside quotes)."""
  out, depth, start, quote = [], 0, None, None
  for i, ch in enumerate(text):
    if quote:
      if ch == quote and text[i - 1] != "\\":
        quote = None
      continue
    if ch in "\"'" and depth:
      quote = ch
    elif ch == "{":
      if depth == 0:
        start = i
      depth += 1
    elif ch == "}" and depth:
      depth -= 1
      if depth == 0:
        out.append(text[start:i + 1])
  return out


def loads_lenient(blob: str) -> Any:
  """json.loads, then Python-literal parsing, then common repairs; raises ValueError if all fail."""
  try:
    return json.loads(blob)
  except ValueError:
    pass
  fixed = re.sub(r",\s*([}\]])", r"\1", blob)
  for candidate in (fixed, re.sub(r"\btrue\b", "True", re.sub(r"\bfalse\b", "False",
                                                               re.sub(r"\bnull\b", "None", fixed)))):
    try:
      return ast.literal_eval(candidate)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
      continue
  raise ValueError(f"unreadable JSON object: {blob[:80]!r}")


def extract_json(text: str, tag: str = "state") -> dict | None:
  """The assertion object: inside <tag>, else in a ```json fence, else the last {...} in the text."""
  regions = []
  tagged = extract_tag(text, tag)
  if tagged is not None:
    regions.append(tagged)
  regions += re.findall(r"```(?:json)?\s*(.*?)```", text, flags=re.S | re.I)
  regions.append(text)
  for region in regions:
    for blob in reversed(_balanced_objects(region)):
      try:
        obj = loads_lenient(blob)
      except ValueError:
        continue
      if isinstance(obj, dict):
        return obj
  return None


@dataclasses.dataclass
class Assertion:
  """Canonical values for every schema field (None = unknown), plus parsing diagnostics."""
  values: dict
  found: bool = True
  invalid: tuple[str, ...] = ()
  extra: tuple[str, ...] = ()  # keys outside the schema (ignored)

  def known(self) -> dict:
    return {k: v for k, v in self.values.items() if v is not None}

  def to_json(self) -> dict:
    return {"values": {k: schemas.to_json(v) for k, v in self.values.items()},
            "found": self.found, "invalid": list(self.invalid), "extra": list(self.extra)}

  @staticmethod
  def from_json(d: dict, schema: schemas.Schema) -> "Assertion":
    values = {f.name: schemas.canonical(f, d["values"].get(f.name)) for f in schema.fields}
    return Assertion(values, d["found"], tuple(d["invalid"]), tuple(d["extra"]))


def _normalise_key(k: str) -> str:
  return re.sub(r"[^a-z0-9]+", "_", str(k).strip().lower()).strip("_")


def parse_assertion(text: str, schema: schemas.Schema, tag: str = "state") -> Assertion:
  """Reads the schema's fields from a reply; unreadable values become unknown and are listed."""
  obj = extract_json(text, tag)
  unknown = {f.name: None for f in schema.fields}
  if obj is None:
    return Assertion(unknown, found=False)
  obj = {_normalise_key(k): v for k, v in obj.items()}
  values, invalid = dict(unknown), []
  for f in schema.fields:
    if f.name in obj:
      try:
        values[f.name] = schemas.canonical(f, obj[f.name])
      except (schemas.InvalidValue, TypeError, ValueError):
        invalid.append(f.name)
  extra = tuple(sorted(set(obj) - set(schema.names)))
  return Assertion(values, True, tuple(invalid), extra)


def parse_choice(text: str | None, choices: Sequence[str]) -> str | None:
  """The choice named in `text`: exact match first, then the longest choice occurring as words."""
  if text is None:
    return None
  s = " ".join(text.strip().strip(".`'\"").lower().replace("_", " ").split())
  norm = {" ".join(c.lower().replace("_", " ").split()): c for c in choices}
  if s in norm:
    return norm[s]
  hits = [(len(k), k) for k in norm if re.search(rf"\b{re.escape(k)}\b", s)]
  return norm[max(hits)[1]] if hits else None


def parse_action(text: str, choices: Sequence[str]) -> str | None:
  """The action in <action>...</action>, else an "Action: x" line; None if it names no choice."""
  tagged = extract_tag(text, "action")
  if tagged is not None:
    return parse_choice(tagged, choices)
  m = re.findall(r"action\s*[:=]\s*([^\n]+)", text, flags=re.I)
  return parse_choice(m[-1], choices) if m else None


def parse_status(text: str) -> str:
  """The actor's report on its sub-goal: "done", "failed" or "ongoing" (default)."""
  s = (extract_tag(text, "status") or "").lower()
  for word in ("done", "failed"):
    if word in s:
      return word
  return "ongoing"
