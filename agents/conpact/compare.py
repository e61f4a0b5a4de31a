"""The programmatic comparator: explicit planner-actor contradictions and correctness vs truth.

A contradiction is a field that BOTH roles stated (not unknown) with different canonical values.
Fields either role left unknown are ignored, so abstaining is never a conflict -- only explicit
disagreement about the same fact is (the paper's notion of planner-actor state mismatch).
"""
import dataclasses
import json

from agents.conpact import schemas


@dataclasses.dataclass(frozen=True)
class Conflict:
  field: str
  planner: object
  actor: object

  def to_json(self) -> dict:
    return {"field": self.field, "planner": schemas.to_json(self.planner),
            "actor": schemas.to_json(self.actor)}


def contradictions(planner: dict, actor: dict, schema: schemas.Schema) -> list[Conflict]:
  """Fields (in schema order) where both stated values and the values differ."""
  out = []
  for name in schema.names:
    p, a = planner.get(name), actor.get(name)
    if p is not None and a is not None and p != a:
      out.append(Conflict(name, p, a))
  return out


def correctness(values: dict, truth: dict) -> dict[str, bool]:
  """field -> stated value equals ground truth, over fields stated AND applicable in this state."""
  return {k: v == truth[k] for k, v in values.items()
          if v is not None and truth.get(k) is not None}


def reconcile(planner: dict, actor: dict, schema: schemas.Schema) -> dict:
  """The shared interpretation after a discussion: values the roles agree on, or that only one
  stated; contradicted fields stay unknown (neither side's claim is adopted unilaterally)."""
  out = {}
  for name in schema.names:
    p, a = planner.get(name), actor.get(name)
    out[name] = p if a is None else a if p is None else p if p == a else None
  return out


def describe_conflicts(conflicts: list[Conflict]) -> str:
  """Feedback text listing each contradicted field with both roles' claims."""
  lines = []
  for c in conflicts:
    d = c.to_json()
    lines.append(f'- "{c.field}": planner says {_show(d["planner"])}, actor says {_show(d["actor"])}')
  return "\n".join(lines)


def _show(v) -> str:
  return json.dumps(v)
