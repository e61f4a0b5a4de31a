"""Assertion schemas, tolerant parsing and the comparator, checked against real env ground truth."""
import jax.numpy as jnp
import numpy as np
import pytest

from agents.conpact import compare, parse, schemas
from envs import splits
from envs.sokoban import env as sokoban_env
from envs.sokoban import text as sokoban_text

SOKO = schemas.get("sokoban")


@pytest.mark.parametrize("text", [
    '<state>{"player": [3, 4], "boxes": [[2, 4], [3, 5]], "boxes_on_targets": 0, '
    '"blocked_moves": ["down", "left"]}</state><action>up</action>',
    "<state>{'Player': (3, 4), 'boxes': '(3,5), (2,4)', 'boxes on targets': '0', "
    "'blocked_moves': 'Left, DOWN',}</state>",
    'I think ```json\n{"player": "row 3, col 4", "boxes": [[3, 5], [2, 4]], "boxes_on_targets": 0,'
    ' "blocked_moves": ["left", "down"]}\n``` so <action>up',
    '<state>{"player": {"row": 3, "col": 4}, "boxes": [[2,4],[3,5]], "boxes_on_targets": 0, '
    '"blocked_moves": ["down","left"]',  # unclosed tag and brace -> falls back to no object
])
def test_tolerant_parse_reads_surface_variants(text):
  a = parse.parse_assertion(text, SOKO)
  if text.endswith('"left"]'):
    assert not a.found and all(v is None for v in a.values.values())
    return
  assert a.found and a.invalid == ()
  assert a.values == {"player": (3, 4), "boxes": frozenset({(2, 4), (3, 5)}),
                      "boxes_on_targets": 0, "blocked_moves": frozenset({"down", "left"})}


def test_unknown_and_invalid_values_never_conflict():
  p = parse.parse_assertion('<state>{"player": "unknown", "boxes": [[1, 1]], '
                            '"boxes_on_targets": "lots", "blocked_moves": []}</state>', SOKO)
  assert p.values["player"] is None and "boxes_on_targets" in p.invalid
  a = parse.parse_assertion('<state>{"player": [2, 2], "boxes": [[1, 2]], '
                            '"boxes_on_targets": 1}</state>', SOKO)
  conflicts = compare.contradictions(p.values, a.values, SOKO)
  assert [c.field for c in conflicts] == ["boxes"]  # player/boxes_on_targets unknown on one side
  assert compare.reconcile(p.values, a.values, SOKO) == {
      "player": (2, 2), "boxes": None, "boxes_on_targets": 1, "blocked_moves": frozenset()}
  assert '"boxes": planner says [[1, 1]], actor says [[1, 2]]' in compare.describe_conflicts(conflicts)


def _blocked_by_stepping(state) -> set[str]:
  """Independent ground truth: a move is blocked iff stepping the real env changes nothing."""
  env = sokoban_env.Sokoban.__new__(sokoban_env.Sokoban)
  env.max_steps_in_episode = 100
  params = sokoban_env.SokobanParams(levels=jnp.zeros((1, 1, 1), jnp.int8))
  out = set()
  for a, name in enumerate(sokoban_env.ACTION_NAMES):
    _, nxt, *_ = env.step_env(None, state, jnp.int32(a), params)
    if np.array_equal(nxt.player, state.player) and np.array_equal(nxt.boxes, state.boxes):
      out.add(name)
  return out


def test_sokoban_truth_matches_stepping_the_env():
  levels = splits.sokoban_instances("evaluation").levels[:5]
  for level in levels:
    state = sokoban_env.state_from_level(jnp.asarray(level))
    truth = SOKO.truth(sokoban_text.state_facts(state))
    assert truth["blocked_moves"] == frozenset(_blocked_by_stepping(state))
    assert truth["player"] == tuple(int(v) for v in np.argwhere(np.isin(level, (5, 6)))[0])
    assert truth["boxes"] == frozenset(map(tuple, np.argwhere(np.isin(level, (3, 4))).tolist()))
    right = dict(truth, player=(truth["player"][0], truth["player"][1] + 1))
    assert compare.correctness(right, truth) == {"player": False, "boxes": True,
                                                 "boxes_on_targets": True, "blocked_moves": True}


def test_minigrid_and_crafter_schemas_canonicalise():
  mg = schemas.get("minigrid")
  a = parse.parse_assertion('{"target_visible": "yes", "target_forward": "2", "target_right": -1, '
                            '"front_object": "A Locked  Blue door", "carrying": "none"}', mg)
  assert a.values == {"target_visible": True, "target_forward": 2, "target_right": -1,
                      "front_object": "locked blue door", "carrying": "nothing"}
  cr = schemas.get("crafter")
  b = parse.parse_assertion('<state>{"facing": "North", "nearby_resources": "tree, water", '
                            '"inventory": "wood 2, sapling 0", "hazard_nearby": false}</state>', cr)
  assert b.values == {"facing": "north", "nearby_resources": frozenset({"tree", "water"}),
                      "inventory": (("wood", 2),), "hazard_nearby": False}
  with pytest.raises(KeyError):
    schemas.get("chess")


def test_action_status_parsing():
  names = ("turn left", "turn right", "go forward", "pick up")
  assert parse.parse_action("<action> Go_Forward. </action>", names) == "go forward"
  assert parse.parse_action("Action: turn right", names) == "turn right"
  assert parse.parse_action("<action>jump</action>", names) is None
  assert parse.parse_status("<status>Done!</status>") == "done"
  assert parse.parse_status("no tag") == "ongoing"
