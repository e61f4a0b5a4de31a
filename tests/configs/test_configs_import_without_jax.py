"""Config files are data: every module under configs/ imports and builds its config without JAX.

A child process installs a `sys.meta_path` finder that refuses the heavy packages, then imports
each config module and calls `get_config()` (and `get_config("debug=True")` where the config
declares `debug`). A config that reaches a trainer, a model or a tokenizer, even through
`lib`, `agents` or `envs`, fails here. The negative cases prove the finder catches an import of
JAX, direct or transitive.
"""
import json
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
BLOCKED = ("jax", "jaxlib", "flax", "optax", "orbax", "transformers", "torch", "tokenizers")

# Run as `python -c CHILD <blocked,comma-separated> <module> ...`; prints one JSON object:
# {"errors": {module: "ExceptionType: message"}, "configs": number of get_config modules built}.
CHILD = r"""
import importlib
import importlib.abc
import json
import sys
import traceback

BLOCKED = set(sys.argv[1].split(","))


class RefuseHeavyImports(importlib.abc.MetaPathFinder):
  def find_spec(self, name, path=None, target=None):
    if name.partition(".")[0] in BLOCKED:
      raise ImportError(f"{name} imported while loading a config (refused)")
    return None


sys.meta_path.insert(0, RefuseHeavyImports())
errors, built = {}, 0
for name in sys.argv[2:]:
  try:
    module = importlib.import_module(name)
    get_config = getattr(module, "get_config", None)
    if get_config is None:
      continue
    from configs import common
    with common.record_arg_defaults() as defaults:
      get_config()
    if "debug" in defaults:
      get_config("debug=True")
    built += 1
  except Exception as e:  # noqa: BLE001  (every failure is reported, not only ImportError)
    errors[name] = f"{type(e).__name__}: {e}\n" + traceback.format_exc(limit=-3)
print(json.dumps({"errors": errors, "configs": built}))
"""


def _config_modules() -> list[str]:
  out = []
  for path in sorted((ROOT / "configs").rglob("*.py")):
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
      parts = parts[:-1]
    out.append(".".join(parts))
  return out


def _load_without_heavy_packages(modules: list[str], extra_path: str = "") -> dict:
  env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), extra_path) if p))
  proc = subprocess.run([sys.executable, "-c", CHILD, ",".join(BLOCKED), *modules], cwd=ROOT,
                        env=env, capture_output=True, text=True, timeout=120, check=False)
  assert proc.returncode == 0, proc.stderr
  return json.loads(proc.stdout.strip().splitlines()[-1])


def test_every_config_imports_and_builds_without_jax(tmp_path):
  # A planted module that imports JAX directly, and one that reaches it through lib/: both must
  # be refused in the same child run, so the finder is shown to work where the configs load.
  (tmp_path / "probe_imports_jax.py").write_text("import jax\n")
  (tmp_path / "probe_imports_trainer.py").write_text("from lib.plan import memory_plan\n")
  modules = _config_modules()
  assert len(modules) > 30
  out = _load_without_heavy_packages(modules + ["probe_imports_jax", "probe_imports_trainer"],
                                     extra_path=str(tmp_path))
  errors = out["errors"]
  assert set(errors) >= {"probe_imports_jax", "probe_imports_trainer"}
  assert "jax imported while loading a config (refused)" in errors["probe_imports_jax"]
  assert "imported while loading a config (refused)" in errors["probe_imports_trainer"]
  config_errors = {k: v for k, v in errors.items() if not k.startswith("probe_")}
  assert config_errors == {}, "\n".join(f"{k}: {v}" for k, v in config_errors.items())
  assert out["configs"] > 30
