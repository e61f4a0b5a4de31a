"""The short-context sender drill: its rows and their records (training with it:
test_learned_train.py)."""
import json

import pytest

from agents.gencoord import data, facts, suites
from agents.gencoord.learned import chat, drill


def test_drill_rows_are_train_side_senders_with_full_row_targets():
  rows = drill.drill_rows(4)
  eps = {ep.episode_id: ep for ep in suites.suite("train", per_template=4)}
  assert len(rows) == len(eps) == 4 * 8 * 2 and {r.stage for r in rows} == {"sender_initial"}
  full = {r.episode_id: r.target for r in data.forward_rows(list(eps.values()))
          if r.stage == "sender_initial"}
  for r in rows:
    ep = eps[r.episode_id]
    assert data.validate(r) and r.target == full[r.episode_id]
    # every drilled view is a training-side view: no validation or evaluation world is drilled
    assert facts.view_side(facts.view_key(ep.template, ep.sender, ep.goal_count,
                                          ep.inventory(ep.sender))) == "train"


def test_drill_record_hashes_the_short_prompt():
  r = drill.drill_rows(2)[0]
  rec = drill.drill_record(r)
  assert rec["prompt"] == chat.own_messages(r.context)[0]["content"]
  assert rec["target"] == r.target and len(rec["prompt_sha256"]) == 64
  assert json.loads(json.dumps(rec)) == rec


def test_other_surfaces_drill_their_own_sender_targets():
  json_rows = drill.drill_rows(2, "json")
  dsl_rows = drill.drill_rows(2)
  assert [r.episode_id for r in json_rows] == [r.episode_id for r in dsl_rows]
  assert all(r.surface == "json" and r.target.lstrip().startswith("{") for r in json_rows)
  single = drill.drill_rows(2, "single_step")
  assert {r.stage for r in single} == {"sender_initial", "sender_after_obtain"}
  with pytest.raises(ValueError, match="capability_train"):
    drill.drill_rows(2, "requester")
