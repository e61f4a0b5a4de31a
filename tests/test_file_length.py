"""The house rule "files stay at 400 lines or fewer" (CONTRIBUTING.md): every Python file of the
tree (agents/, configs/, envs/, experiments/, lib/, tests/ and launch.py), tracked or not yet, so a
new file is checked before it is committed."""
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
TREES = ("agents", "configs", "envs", "experiments", "lib", "tests")
MAX_LINES = 400
SKIPPED_DIRS = {"node_modules", "__pycache__"}   # installed JS bridges, bytecode


def python_files() -> list[pathlib.Path]:
  """launch.py and every .py file under TREES (installed or generated folders skipped)."""
  found = [ROOT / "launch.py"]
  for tree in TREES:
    found += [p for p in sorted((ROOT / tree).rglob("*.py")) if not SKIPPED_DIRS & set(p.parts)]
  return found


def test_every_python_file_has_at_most_400_lines():
  files = python_files()
  assert len(files) > 100 and pathlib.Path(__file__).resolve() in files   # the walk sees the tree
  lengths = {p.relative_to(ROOT).as_posix(): len(p.read_text().splitlines()) for p in files}
  offenders = [f"{path}: {n} lines" for path, n in sorted(lengths.items()) if n > MAX_LINES]
  assert not offenders, (f"{len(offenders)} file(s) over {MAX_LINES} lines; split each by concept "
                         "(one concept per module):\n  " + "\n  ".join(offenders))
