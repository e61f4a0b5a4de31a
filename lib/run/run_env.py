"""What a run's numbers depend on besides its config: the numerics settings and library versions.

launch.py writes `<workdir>/run_env.json` next to `config.json`. Two runs with equal configs can
still train different models when XLA compiles their float math differently (e.g.
`XLA_FLAGS=--xla_cpu_enable_fast_math=true`), so whatever reuses another run's results compares
this record first (agents/gencoord/learned/reuse.py).
"""
import importlib.metadata
import json
import os

# Environment variables that change compiled float math or its precision.
NUMERICS_VARS = ("XLA_FLAGS", "JAX_ENABLE_X64", "JAX_DEFAULT_MATMUL_PRECISION", "JAX_PLATFORMS")
FILENAME = "run_env.json"


def _version(package: str) -> str:
  try:
    return importlib.metadata.version(package)
  except importlib.metadata.PackageNotFoundError:
    return ""


def current() -> dict:
  """{"env": {var: value or ""}, "versions": {package: version or ""}} of this process (no
  backend is initialised: launch.py calls it before any distributed setup)."""
  return {"env": {v: os.environ.get(v, "") for v in NUMERICS_VARS},
          "versions": {p: _version(p) for p in ("jax", "jaxlib", "flax", "optax")}}


def write(workdir: str) -> dict:
  """Writes `current()` to `<workdir>/run_env.json` and returns it."""
  record = current()
  with open(os.path.join(workdir, FILENAME), "w", encoding="utf-8") as f:
    json.dump(record, f, indent=2, sort_keys=True)
  return record


def load(workdir: str) -> dict | None:
  """The record of a run directory, or None when it has none (runs made before it existed) or
  it cannot be read."""
  try:
    with open(os.path.join(workdir, FILENAME), encoding="utf-8") as f:
      record = json.load(f)
  except (OSError, ValueError):
    return None
  return record if isinstance(record, dict) else None


def differences(a: dict, b: dict) -> list[str]:
  """The settings in which two records differ, as "name: a-value != b-value" lines."""
  out = []
  for section in ("env", "versions"):
    left, right = a.get(section) or {}, b.get(section) or {}
    for key in sorted(set(left) | set(right)):
      if left.get(key, "") != right.get(key, ""):
        out.append(f"{key}: {left.get(key, '')!r} != {right.get(key, '')!r}")
  return out
