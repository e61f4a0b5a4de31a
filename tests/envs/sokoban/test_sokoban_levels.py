"""ASCII parsing and the Boxoban file loader (files written by the test)."""
import numpy as np
import pytest

from envs.sokoban import levels as lv

BOARD_A = ["##########", "#@  $  . #", "#  $  .  #", "# $ .    #", "#  $   . #",
           "#        #", "#        #", "#        #", "#        #", "##########"]
BOARD_B = ["##########", "#  .  $ @#", "#  *     #", "#  .  $  #", "#  .  $  #",
           "#        #", "#        #", "#        #", "#        #", "##########"]


def _write(path, boards, ids):
  text = "".join(f"; {i}\n" + "\n".join(b) + "\n\n" for i, b in zip(ids, boards))
  path.write_text(text)


def test_from_ascii_codes_and_round_trip():
  level = lv.from_ascii("#####\n#@$.#\n#####")
  assert level[1, 1] == lv.PLAYER and level[1, 2] == lv.BOX and level[1, 3] == lv.TARGET
  text = "######\n#+ $*#\n#    #\n######"
  assert lv.to_ascii(lv.from_ascii(text)) == text


def test_from_ascii_rejects_bad_levels():
  with pytest.raises(ValueError, match="symbol 'x'"):
    lv.from_ascii("#####\n#@x.#\n#####")
  with pytest.raises(ValueError, match="one player"):
    lv.from_ascii("#####\n# $.#\n#####")
  with pytest.raises(ValueError, match="targets"):
    lv.from_ascii("######\n#@$$.#\n######")


def test_ragged_lines_are_padded_with_walls():
  level = lv.from_ascii("####\n#@$.#\n#####")
  assert level.shape == (3, 5) and level[0, 4] == lv.WALL


def test_load_boxoban_file_and_directory(tmp_path):
  _write(tmp_path / "000.txt", [BOARD_A, BOARD_B], [0, 1])
  _write(tmp_path / "001.txt", [BOARD_B], [7])
  (tmp_path / "notes.md").write_text("ignored")
  ids, levels = lv.load_boxoban(str(tmp_path / "000.txt"))
  assert ids == ["000.txt:0", "000.txt:1"] and levels.shape == (2, 10, 10)
  assert lv.to_ascii(levels[0]).split("\n") == BOARD_A
  ids, levels = lv.load_boxoban(str(tmp_path))
  assert ids == ["000.txt:0", "000.txt:1", "001.txt:7"]
  np.testing.assert_array_equal(levels[2], levels[1])
  assert (levels == lv.BOX_ON_TARGET).sum() == 2  # the '*' of BOARD_B, twice


def test_load_boxoban_reports_the_bad_level(tmp_path):
  bad = list(BOARD_A)
  bad[1] = "#   $  . #"  # no player
  _write(tmp_path / "bad.txt", [BOARD_A, bad], [0, 1])
  with pytest.raises(ValueError, match=r"bad.txt: level '1'.*one player"):
    lv.load_boxoban(str(tmp_path / "bad.txt"))
