"""Sokoban level formats: cell codes, `from_ascii`, `to_ascii` and the Boxoban file loader.

A level is an int8 array [H, W] of cell codes (below); a level bank is int8 [N, H, W]. Boxoban
files hold levels as `; <id>` followed by H lines of `#` wall, `@` player, `$` box, `.` target and
space floor (`*` box on target and `+` player on target are accepted too).
"""
import os

import numpy as np

FLOOR, WALL, TARGET, BOX, BOX_ON_TARGET, PLAYER, PLAYER_ON_TARGET = range(7)
NUM_CODES = 7
CHAR_TO_CODE = {" ": FLOOR, "-": FLOOR, "_": FLOOR, "#": WALL, ".": TARGET, "$": BOX,
                "*": BOX_ON_TARGET, "@": PLAYER, "+": PLAYER_ON_TARGET}
CODE_TO_CHAR = {FLOOR: " ", WALL: "#", TARGET: ".", BOX: "$", BOX_ON_TARGET: "*", PLAYER: "@",
                PLAYER_ON_TARGET: "+"}


def check_level(level: np.ndarray) -> None:
  """Raises ValueError unless the level has one player, >= 1 box and as many boxes as targets."""
  level = np.asarray(level)
  players = np.isin(level, (PLAYER, PLAYER_ON_TARGET)).sum()
  boxes = np.isin(level, (BOX, BOX_ON_TARGET)).sum()
  targets = np.isin(level, (TARGET, BOX_ON_TARGET, PLAYER_ON_TARGET)).sum()
  if players != 1:
    raise ValueError(f"a level needs exactly one player, found {players}")
  if boxes == 0 or boxes != targets:
    raise ValueError(f"a level needs >= 1 box and as many targets as boxes; {boxes} boxes, {targets} targets")


def from_ascii(text: str) -> np.ndarray:
  """Parses a board drawn with Boxoban symbols into int8 [H, W]; short lines are padded with walls.

  Blank leading/trailing lines are dropped; other whitespace is floor.
  """
  lines = [line.rstrip("\n") for line in text.strip("\n").split("\n")]
  if not lines or not any(lines):
    raise ValueError("empty Sokoban level")
  width = max(len(line) for line in lines)
  level = np.full((len(lines), width), WALL, np.int8)
  for r, line in enumerate(lines):
    for c, ch in enumerate(line):
      if ch not in CHAR_TO_CODE:
        raise ValueError(f"unknown Sokoban symbol {ch!r} at line {r}, column {c}")
      level[r, c] = CHAR_TO_CODE[ch]
  check_level(level)
  return level


def to_ascii(level: np.ndarray) -> str:
  return "\n".join("".join(CODE_TO_CHAR[int(v)] for v in row) for row in np.asarray(level))


def parse_boxoban(text: str, source: str = "<text>") -> tuple[list[str], np.ndarray]:
  """Parses one Boxoban file: returns (level ids, int8 [N, H, W])."""
  names, boards, current = [], [], None
  for lineno, raw in enumerate(text.split("\n"), 1):
    line = raw.rstrip("\r")
    if line.startswith(";"):
      if current is not None:
        boards.append(current)
      names.append(line[1:].strip())
      current = []
    elif current is not None and line.strip():
      current.append(line)
    elif line.strip():
      raise ValueError(f"{source}:{lineno}: board line before any '; <id>' header")
  if current is not None:
    boards.append(current)
  levels = []
  for name, rows in zip(names, boards):
    try:
      levels.append(from_ascii("\n".join(rows)))
    except ValueError as e:
      raise ValueError(f"{source}: level {name!r}: {e}") from e
  if not levels:
    raise ValueError(f"{source}: no levels found")
  shapes = {lv.shape for lv in levels}
  if len(shapes) != 1:
    raise ValueError(f"{source}: levels have different shapes {sorted(shapes)}")
  return [f"{os.path.basename(source)}:{n}" for n in names], np.stack(levels)


def load_boxoban(path: str) -> tuple[list[str], np.ndarray]:
  """Loads a Boxoban file or every `*.txt` in a directory (sorted by name); (ids, int8 [N, H, W])."""
  files = ([os.path.join(path, f) for f in sorted(os.listdir(path)) if f.endswith(".txt")]
           if os.path.isdir(path) else [path])
  if not files:
    raise ValueError(f"no .txt Boxoban files in {path}")
  all_names, all_levels = [], []
  for f in files:
    with open(f) as fh:
      names, levels = parse_boxoban(fh.read(), source=f)
    all_names += names
    all_levels.append(levels)
  shapes = {lv.shape[1:] for lv in all_levels}
  if len(shapes) != 1:
    raise ValueError(f"files in {path} hold levels of different shapes {sorted(shapes)}")
  return all_names, np.concatenate(all_levels)
