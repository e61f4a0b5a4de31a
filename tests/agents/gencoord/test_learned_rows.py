"""Recipes (Table S6 / S17 row counts) and SFT arrays with target-only loss masks."""
import pytest

from agents.gencoord import data
from agents.gencoord.learned import chat, sft_rows, tokenizer as dsl_tokenizer
from agents.gencoord.learned import training_recipes as recipes
from lib.sft import batches as sft_batches, chat_rows


@pytest.mark.parametrize("name,counts", [
    ("direct_dsl", {"sender_initial": 960, "receiver_after_request": 960}),
    ("factor", {"sender_initial": 960, "receiver_after_request": 960}),
    ("single_step", {"sender_initial": 960, "sender_after_obtain": 960,
                     "receiver_after_request": 960}),
    ("requester", {"requester_initial": 320, "requester_after_response": 320}),
    ("centralized", {"centralized": 320}),
])
def test_recipe_row_counts_and_validity(name, counts):
  rows = recipes.get(name).rows()
  got = {}
  for r in rows:
    got[r.stage] = got.get(r.stage, 0) + 1
  assert got == counts
  assert all(data.validate(r) for r in rows[::37])
  assert {r.surface for r in rows} == {recipes.get(name).surface}


def test_unknown_recipe():
  with pytest.raises(KeyError, match="valid"):
    recipes.get("telepathy")


def test_loss_mask_covers_exactly_target_and_eos(tmp_path):
  rows = recipes.get("direct_dsl").rows()[:24]
  tok = dsl_tokenizer.train_dsl_tokenizer(
      [chat.system_prompt() + r.prompt + r.target for r in rows], 500, tmp_path)
  arr = sft_batches.left_padded(chat_rows.encode_rows(tok, chat.sft_pairs(rows, "dsl")),
                                tok.pad_token_id or 0)
  assert arr["input_ids"].shape[1] % 16 == 0
  eos = tok.convert_tokens_to_ids("<|im_end|>")
  for i, r in enumerate(rows):
    ids, mask = arr["input_ids"][i], arr["loss_mask"][i].astype(bool)
    target = ids[mask].tolist()
    assert target[-1] == eos and tok.decode(target[:-1]) == r.target
    n = int(arr["attention_mask"][i].sum())          # left-padded: real tokens at the end
    assert arr["attention_mask"][i, -n:].all()
    assert tok.decode(ids[-n:][~mask[-n:]].tolist()) == chat.prompt_text(tok, r.context)
    assert not mask[:-n].any() and int(mask.sum()) == arr["target_len"][i]
    assert mask[-arr["target_window"]:].sum() == mask.sum()      # the train step's window


def test_contrast_groups_hold_one_world_with_every_binding_and_role_view():
  rows = recipes.get("direct_dsl").rows()
  groups = sft_rows.contrast_groups(rows)
  members: dict = {}
  for i, g in enumerate(groups):
    members.setdefault(g, []).append(i)
  assert -1 not in members and len(members) == len(rows) // 4
  for group in list(members.values())[::97]:
    rs = [rows[i] for i in group]
    assert len({(r.binding, r.role_view) for r in rs}) == 4
    assert len({(r.template, r.stage, r.context.observation.get("goal_count"))
                for r in rs}) == 1
    assert len({chat.messages(r.context)[-1]["content"] for r in rs}) == 4
  # A row without a full group (a subsample can leave one) gets -1.
  assert sft_rows.contrast_groups(rows[:1]) == [-1]


def test_contrast_groups_skip_cells_missing_a_binding_role_pair():
  rows = recipes.get("direct_dsl").rows()
  cell = [r for r in rows if (r.template, r.stage) == ("dual_build", "sender_initial")
          and r.context.observation.get("goal_count") == 1]
  without = [r for r in cell if (r.binding, r.role_view) != ("WALL", 1)]
  assert set(sft_rows.contrast_groups(without)) == {-1}
  assert -1 not in sft_rows.contrast_groups(cell)


def test_contrast_groups_pair_the_bindings_of_a_one_view_dialogue_round():
  # The free-form dialogue's extra intent/state round exists for one role view only: its rows
  # are grouped by binding (2 rows), the rest by binding x role view (4 rows); none is left out.
  rows = recipes.get("freeform").rows()
  groups = sft_rows.contrast_groups(rows)
  members: dict = {}
  for i, g in enumerate(groups):
    members.setdefault(g, []).append(i)
  assert -1 not in members
  sizes = {}
  for group in members.values():
    rs = [rows[i] for i in group]
    assert len({(r.template, r.stage, r.context.observation.get("goal_count"))
                for r in rs}) == 1
    assert len({r.binding for r in rs}) == 2
    views = {r.role_view for r in rs}
    assert len(rs) == 2 * len(views)
    sizes[len(rs)] = sizes.get(len(rs), 0) + 1
    if len(rs) == 2:
      assert rs[0].stage in ("sender_intent", "receiver_query")
  assert sizes == {4: 480, 2: 240}
