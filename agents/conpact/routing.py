"""A backend that sends each conversation to its role's backend (planner vs actor models).

The paper pairs different models as planner and actor (e.g. a large planner, a small actor). The
host loop talks to one `Backend`; `RoleRouter` is that backend: it reads the role from the system
prompt's first line ("ROLE: planner" / "ROLE: actor", see prompts.py), groups the batch by role,
makes one call per role backend and puts the replies back in order. Usage is recorded both here
(the whole batch) and in each role backend (its share).
"""
from lib.backends.protocol import Backend

ROLES = ("planner", "actor")


def role_of(conversation) -> str:
  first = conversation[0]["content"].split("\n", 1)[0] if conversation else ""
  return "planner" if first.strip() == "ROLE: planner" else "actor"


class RoleRouter(Backend):

  def __init__(self, backends: dict[str, Backend]):
    super().__init__()
    missing = set(ROLES) - set(backends)
    if missing:
      raise KeyError(f"RoleRouter needs a backend per role; missing {sorted(missing)}")
    self.backends = backends
    names = {b.name for b in backends.values()}
    self.name = names.pop() if len(names) == 1 else "+".join(backends[r].name for r in ROLES)

  def _generate(self, conversations, params):
    out = [None] * len(conversations)
    for role in ROLES:
      idx = [i for i, c in enumerate(conversations) if role_of(c) == role]
      if not idx:
        continue
      replies = self.backends[role].generate([conversations[i] for i in idx],
                                             [params[i] for i in idx])
      for i, r in zip(idx, replies):
        out[i] = r
    return out

  def close(self) -> None:
    seen = set()
    for b in self.backends.values():
      if id(b) not in seen:
        seen.add(id(b))
        b.close()
