"""No `.get("key", default)` reads of a config in experiments/ or agents/ (CONTRIBUTING.md).

Defaults live in the config: a config that reaches a code path sets every field the path reads,
and the code reads it as a plain attribute, so a misspelt or missing field raises instead of
quietly running the default. The check is an AST walk: a call `X.get(...)` where X is a chain of
attributes and subscripts starting at the name `config` or `c` (the names config blocks go by
here). Other names (`row.get`, `ctx.observation.get`) are not config reads and are not checked.
"""
import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
CONFIG_NAMES = ("config", "c")
CHECKED = ("experiments", "agents")


def _root_name(node: ast.AST) -> str | None:
  """`config` for `config.train["x"].eval`; None when the chain starts at anything but a name."""
  while isinstance(node, (ast.Attribute, ast.Subscript)):
    node = node.value
  return node.id if isinstance(node, ast.Name) else None


def config_get_calls(source: str) -> list[tuple[int, str]]:
  """(line, call text) of every `.get(...)` on a chain rooted at a config name in `source`."""
  return sorted((node.lineno, ast.unparse(node)) for node in ast.walk(ast.parse(source))
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "get" and _root_name(node.func.value) in CONFIG_NAMES)


@pytest.mark.parametrize("source,hits", [
    ('config.get("debug")', 1),
    ('x = config.report.get("overlap_min_samples", 4)', 1),
    ('c.get("epochs", 0) or c.train.get("bucket", 0)', 2),
    ('config.runs["C0"].get("debug", False)', 1),
    ('row.get("x"); ctx.observation.get("note"); configs.get("a"); cfg_c.get(1)', 0),
    ('config.train.get_ref("batch"); config.paper["dsl"] if "dsl" in config.paper else ""', 0),
])
def test_finder_flags_config_get_calls_only(source, hits):
  assert len(config_get_calls(source)) == hits, config_get_calls(source)


def test_no_config_get_in_experiments_or_agents():
  files = sorted(p for d in CHECKED for p in (ROOT / d).rglob("*.py"))
  assert len(files) > 50
  found = [f"{p.relative_to(ROOT)}:{line}: {text}" for p in files
           for line, text in config_get_calls(p.read_text(encoding="utf-8"))]
  assert not found, ("config fields read with a default in the code; set them in every config "
                     "that reaches the code and read them as attributes:\n" + "\n".join(found))
