"""The regex of a valid Short DSL commitment, for constrained decoding of the learned backends.

`DSL_REGEX` accepts a subset of what `agents.gencoord.dsl.parse` accepts -- exactly the canonical
two-line form `dsl.serialize` writes, with bare values -- so every output sampled under it parses
(`raw_valid` is 100% by construction, tested against the real parser):

  SELF <path> | SELF -
  REQ <target> <path> | REQ -

where a path is 1..MAX_TASKS catalog skills joined by " > ", and a task's arguments are the
skill's schema keys (`skills.SCHEMAS`: every required key, any optional ones, each once, in
canonical order, so no duplicate key can appear) with a bare value: an integer, or an atom that
starts with a letter or "_" (never a float or an exponent, which could overflow), at most 32
characters (so even an untrained model's output ends). JSON-quoted
strings, alias keys, keys outside the schema and free whitespace are legal DSL that the
constraint leaves out; the trained models write the canonical form.

Over the quickstart's 864-token DSL BPE its token DFA has 34,231 states x 255 token classes
(33 MiB), built once per process in about 9 s (cached per regex). On the quickstart's held-out
pool (seed 0, 128 clusters x 2 views) the trained model is 128/128 and 100% raw-valid both
free and constrained; an untrained or barely trained model goes from 0% to 100% raw validity.

`SURFACE_REGEX` maps a policy surface to its regex; surfaces without one are refused.
"""
from agents.gencoord import dsl, skills
from lib.generate import token_dfa

_INT = r"-?[0-9]{1,9}"
_ATOM = r"[A-Za-z_][A-Za-z0-9_.:/+\-]{0,31}"
_VALUE = f"({_INT}|{_ATOM})"
_TARGET = r"[A-Za-z0-9_.:/+\-]{1,32}"


def _args(schema: skills.SkillSchema) -> str:
  """A skill's `k=v,...` in canonical key order: every required key, any optional ones."""
  keys = list(dsl.canonical_args({k: 0 for k in {**schema.required, **schema.optional}}))
  req = [k in schema.required for k in keys]
  arg = lambda k: f"{token_dfa.escape(k)}={_VALUE}"
  rest = lambda i: "".join(f",{arg(k)}" if r else f"(,{arg(k)})?"
                           for k, r in zip(keys[i:], req[i:]))
  # The first key written: any key up to and including the first required one.
  last = req.index(True) if any(req) else len(keys) - 1
  firsts = "|".join(arg(keys[i]) + rest(i + 1) for i in range(last + 1))
  return f"({firsts})" if any(req) else f"({firsts})?"


def _path() -> str:
  task = "(" + "|".join(f"{token_dfa.escape(name)}\\({_args(skills.SCHEMAS[name])}\\)"
                        for name in dsl.SKILLS) + ")"
  return f"{task}( > {task}){{0,{dsl.MAX_TASKS - 1}}}"


def dsl_regex() -> str:
  """The regex of a two-line Short DSL commitment (see the module docstring)."""
  path = _path()
  return f"SELF ({path}|-)\\nREQ ({_TARGET} {path}|-)"


DSL_REGEX = dsl_regex()
SURFACE_REGEX = {"dsl": DSL_REGEX}


def surface_regex(surface: str) -> str:
  """The constraint regex of a policy surface.

  Args:
    surface: the policy's output surface ("dsl").
  Raises:
    ValueError: for a surface without a regex (JSON, free-form, factor codes).
  """
  if surface not in SURFACE_REGEX:
    raise ValueError(f"constrained decoding has a regex for surfaces {sorted(SURFACE_REGEX)}, "
                     f"not {surface!r}")
  return SURFACE_REGEX[surface]
