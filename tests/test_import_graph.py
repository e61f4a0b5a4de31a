"""The package's import graph: no cycles, no reaching into another module's private names, and
function-local imports only for optional heavy dependencies (each with a comment saying which).

The graph is read from the source with `ast` (every `import` statement, module level or inside a
function), so a cycle that only closes at run time through a function-local import is caught too.
"""
import ast
import os
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGES = ("agents", "configs", "envs", "experiments", "lib")


def _module_name(path: pathlib.Path) -> str:
  parts = list(path.relative_to(ROOT).with_suffix("").parts)
  if parts[-1] == "__init__":
    parts = parts[:-1]
  return ".".join(parts)


def _sources() -> dict[str, pathlib.Path]:
  found = {"launch": ROOT / "launch.py"}
  for package in PACKAGES:
    for dirpath, dirnames, filenames in os.walk(ROOT / package):
      dirnames[:] = [d for d in dirnames if d not in ("node_modules", "__pycache__")]
      for name in filenames:
        if name.endswith(".py"):
          path = pathlib.Path(dirpath) / name
          found[_module_name(path)] = path
  return found


SOURCES = _sources()


def _resolve(node: ast.AST, importer: str, is_package: bool) -> list[tuple[str, str | None]]:
  """-> [(target module, imported name or None)] for one import statement, project modules only."""
  out = []
  if isinstance(node, ast.Import):
    for alias in node.names:
      if alias.name in SOURCES:
        out.append((alias.name, None))
    return out
  base = node.module or ""
  if node.level:
    parent = importer.split(".") if is_package else importer.split(".")[:-1]
    parent = parent[:len(parent) - (node.level - 1)]
    base = ".".join(parent + ([base] if base else []))
  for alias in node.names:
    submodule = f"{base}.{alias.name}" if base else alias.name
    if submodule in SOURCES:
      out.append((submodule, None))
    elif base in SOURCES:
      out.append((base, alias.name))
  return out


def _reason(comment: str) -> bool:
  """A comment that says why, not only a linter switch (`pylint: disable=...`, `noqa`)."""
  text = re.sub(r"pylint:\s*disable=[\w,-]+|noqa(:\s*[A-Z]+\d+(,\s*[A-Z]+\d+)*)?", "", comment)
  return any(ch.isalpha() for ch in text)


def _imports():
  """-> list of (importer, target, name, function_local, lineno, has_comment)."""
  rows = []
  for module, path in SOURCES.items():
    text = path.read_text()
    lines = text.splitlines()
    tree = ast.parse(text, filename=str(path))
    local = set()
    for fn in ast.walk(tree):
      if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        local.update(id(n) for n in ast.walk(fn) if isinstance(n, (ast.Import, ast.ImportFrom)))
    for node in ast.walk(tree):
      if not isinstance(node, (ast.Import, ast.ImportFrom)):
        continue
      line = lines[node.lineno - 1]
      above = node.lineno - 2      # the comment may head a block of consecutive imports
      while above >= 0 and lines[above].strip().startswith(("import ", "from ")):
        above -= 1
      before = lines[above].strip() if above >= 0 else ""
      has_comment = _reason(line.partition("#")[2]) or (
          before.startswith("#") and _reason(before[1:]))
      is_local = id(node) in local
      targets = _resolve(node, module, path.name == "__init__.py")
      if not targets and is_local:
        rows.append((module, None, None, True, node.lineno, has_comment))
      for target, name in targets:
        rows.append((module, target, name, is_local, node.lineno, has_comment))
  return rows


IMPORTS = _imports()


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
  """Strongly connected components of size > 1 (Tarjan), each a list of module names."""
  index, low, stack, on_stack, out = {}, {}, [], set(), []
  counter = [0]

  def visit(v):
    index[v] = low[v] = counter[0]
    counter[0] += 1
    stack.append(v)
    on_stack.add(v)
    for w in edges.get(v, ()):
      if w not in index:
        visit(w)
        low[v] = min(low[v], low[w])
      elif w in on_stack:
        low[v] = min(low[v], index[w])
    if low[v] == index[v]:
      component = []
      while True:
        w = stack.pop()
        on_stack.discard(w)
        component.append(w)
        if w == v:
          break
      if len(component) > 1:
        out.append(sorted(component))

  for v in sorted(edges):
    if v not in index:
      visit(v)
  return out


def test_cycle_finder_finds_a_planted_cycle():
  assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
  assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles():
  edges: dict[str, set[str]] = {}
  for importer, target, _, _, _, _ in IMPORTS:
    if target is not None and target != importer:
      edges.setdefault(importer, set()).add(target)
  assert _cycles(edges) == []


def test_no_private_names_across_modules():
  offenders = [f"{importer}:{line} imports {target}.{name}"
               for importer, target, name, _, line, _ in IMPORTS
               if name is not None and name.startswith("_") and not name.startswith("__")
               and target != importer]
  assert offenders == []


def test_function_local_imports_carry_a_comment():
  """An import inside a function hides a dependency (and often a cycle). It is allowed only to
  defer an optional heavy dependency (vLLM, torch, procgen, a JVM or Node bridge, or a project
  module that imports one), with a comment on the line or the line above saying which."""
  uncommented = [f"{importer}:{line}" + (f" imports {target}" if target else "")
                 for importer, target, _, local, line, commented in IMPORTS
                 if local and not commented and not importer.startswith("configs")]
  assert uncommented == []


def test_experiments_do_not_import_each_other():
  offenders = [f"{importer}:{line} imports {target}" for importer, target, _, _, line, _ in IMPORTS
               if importer.startswith("experiments.") and target is not None
               and target.startswith("experiments.") and target != "experiments.registry"
               and target != "experiments" and not target.startswith(importer + ".")]
  assert offenders == []


def _registry_calls(sources: dict[str, pathlib.Path]) -> list[str]:
  """`registry.get(...)` calls (any receiver named `registry`, or a bare `get` imported from
  experiments.registry) in the experiments' modules of `sources`, the registry itself aside."""
  out = []
  for module, path in sources.items():
    if not module.startswith("experiments.") or module == "experiments.registry":
      continue
    tree = ast.parse(path.read_text(), filename=str(path))
    bare_get = any(isinstance(n, ast.ImportFrom) and n.module == "experiments.registry"
                   and any(a.name == "get" for a in n.names) for n in ast.walk(tree))
    for node in ast.walk(tree):
      if not isinstance(node, ast.Call):
        continue
      f = node.func
      if (isinstance(f, ast.Attribute) and f.attr == "get" and isinstance(f.value, ast.Name)
          and f.value.id == "registry") or (bare_get and isinstance(f, ast.Name)
                                              and f.id == "get"):
        out.append(f"{module}:{node.lineno}")
  return out


def test_experiments_do_not_run_each_other_through_the_registry():
  """Running another experiment by name keeps "no experiment imports another" in letter only: a
  study composes the stage functions of agents/<paper>/ that the single-stage experiments call
  too. Only launch.py runs experiments by name."""
  assert _registry_calls(SOURCES) == []


def test_registry_call_finder_finds_planted_calls(tmp_path):
  planted = {"experiments.a": "from experiments import registry\n\n"
                              "def run(c, w):\n  return registry.get('x')(c, w)\n",
             "experiments.b": "from experiments.registry import get\n\nget('x')\n",
             "experiments.registry": "def get(name):\n  return name\n",
             "launch": "from experiments import registry\nregistry.get('x')\n"}
  sources = {}
  for module, text in planted.items():
    sources[module] = tmp_path / f"{module}.py"
    sources[module].write_text(text)
  assert _registry_calls(sources) == ["experiments.a:4", "experiments.b:3"]


# lib/'s subpackages from the bottom layer up: a module imports from its own subpackage and the
# ones listed before it, never from one listed after it (lib/__init__.py says what each holds).
LIB_LAYERS = ("run", "report", "parallel", "models", "train", "generate", "sft", "rl", "plan",
              "bench", "backends", "hostloop", "serve")
ABOVE_LIB = ("agents", "configs", "envs", "experiments", "launch")


def _layer_violations(imports, layers=LIB_LAYERS) -> list[str]:
  """Imports in `imports` rows from a lib subpackage to one above it in `layers`."""
  rank = {name: i for i, name in enumerate(layers)}
  out = []
  for importer, target, _, _, line, _ in imports:
    if target is None:
      continue
    src, dst = importer.split("."), target.split(".")
    if src[0] == "lib" and dst[0] == "lib" and len(src) > 1 and len(dst) > 1:
      if rank.get(dst[1], -1) > rank.get(src[1], len(layers)):
        out.append(f"{importer}:{line} imports {target} (layer {dst[1]} is above {src[1]})")
  return out


def test_lib_subpackages_import_only_their_own_layer_or_lower():
  assert _layer_violations(IMPORTS) == []


def test_layer_check_finds_a_planted_upward_import():
  rows = [("lib.models.setup", "lib.sft.loop", None, False, 3, False),
          ("lib.sft.loop", "lib.models.setup", None, False, 4, False),
          ("lib.sft.loop", "lib.sft.step", None, False, 5, False)]
  assert _layer_violations(rows) == [
      "lib.models.setup:3 imports lib.sft.loop (layer sft is above models)"]


def test_lib_imports_nothing_above_it():
  offenders = [f"{importer}:{line} imports {target}" for importer, target, _, _, line, _ in IMPORTS
               if importer.split(".")[0] == "lib" and target is not None
               and target.split(".")[0] in ABOVE_LIB]
  assert offenders == []


def test_lib_root_holds_only_the_layered_subpackages():
  lib = ROOT / "lib"
  loose = sorted(p.name for p in lib.glob("*.py") if p.name != "__init__.py")
  packages = sorted(p.name for p in lib.iterdir() if (p / "__init__.py").exists())
  assert loose == []
  assert packages == sorted(LIB_LAYERS)


def _unindexed(package: pathlib.Path, root: pathlib.Path = ROOT) -> list[str]:
  """Modules (`name.py`) and subpackages (`name/`) of `package` its `__init__` docstring does not
  name."""
  doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text())) or ""
  missing = []
  for child in sorted(package.iterdir()):
    if child.suffix == ".py" and child.name != "__init__.py":
      entry = child.name
    elif child.is_dir() and (child / "__init__.py").exists():
      entry = child.name + "/"
    else:
      continue
    if not re.search(rf"(?<![\w/]){re.escape(entry)}", doc):
      missing.append(str(child.relative_to(root)))
  return missing


def test_every_lib_package_init_indexes_its_modules():
  packages = [p.parent for p in (ROOT / "lib").rglob("__init__.py")
              if "__pycache__" not in p.parts]
  missing = [m for package in sorted(packages) for m in _unindexed(package)]
  assert missing == []


def test_index_check_finds_a_module_the_docstring_leaves_out(tmp_path):
  (tmp_path / "__init__.py").write_text(
      '"""A package.\n\n  named.py  listed\n  sub/  listed\n"""\n')
  for name in ("named.py", "unnamed.py", "notnamed.py"):
    (tmp_path / name).write_text("")
  (tmp_path / "sub").mkdir()
  (tmp_path / "sub" / "__init__.py").write_text("")
  assert _unindexed(tmp_path, tmp_path) == ["notnamed.py", "unnamed.py"]

