"""The model-free commitment policies by name: one explicit table, no registration by import.

Learned policies are built from a trained model (`agents/gencoord/learned/policy.py`), not
looked up here. Configs name a policy in a condition's `backend` field.
"""
from typing import Callable

from agents.gencoord.policies import composer, lookup, naturalized, structure_view
from agents.gencoord.policies.base import CommitmentPolicy

POLICIES: dict[str, Callable[..., CommitmentPolicy]] = {
    "program": composer.ProgramPolicy,
    "rule_minimal_request": composer.RuleMinimalRequest,
    "explicit_factor": composer.ExplicitFactorComposer,
    "factorized_rule": structure_view.FactorizedRule,
    "oracle_factors": naturalized.OracleFactors,
    "frozen_parser": naturalized.FrozenFactorParser,
    "surface_table": naturalized.SurfaceTable,
    "case_table": lookup.CaseTable,
    "tfidf_nn": lookup.TfidfNearest,
}


def make(name: str, **kwargs) -> CommitmentPolicy:
  """Builds the policy registered as `name`.

  Args:
    name: a key of `POLICIES`.
    **kwargs: the policy's constructor arguments (training `rows`, oracle `truth`).
  Returns:
    The policy.
  """
  if name not in POLICIES:
    raise KeyError(f"unknown policy {name!r}; valid: {', '.join(names())}")
  return POLICIES[name](**kwargs)


def names() -> list[str]:
  """The registered policy names, sorted."""
  return sorted(POLICIES)


def register(name: str, factory: Callable[..., CommitmentPolicy]) -> None:
  """Adds a policy at run time (plugins, tests); an existing name raises."""
  if name in POLICIES:
    raise ValueError(f"policy {name!r} is already registered")
  POLICIES[name] = factory
