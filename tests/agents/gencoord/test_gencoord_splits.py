"""Instance facts and split disjointness: no evaluation input is a training input."""
import collections
import hashlib
import json

import pytest

from agents.gencoord import data, episode as E, facts, suites, templates
from agents.gencoord.learned import chat, split_audit


@pytest.fixture(scope="module")
def train_prompts():
  """Hashes of every training row's model input (user content: the dsl rendering)."""
  return {split_audit.prompt_sha256(r.context) for r in split_audit.training_rows()}


@pytest.mark.parametrize("pool", split_audit.EVAL_POOLS)
def test_no_evaluation_input_is_a_training_input(pool, train_prompts):
  contexts = split_audit.model_inputs(split_audit.pool(pool))
  stages = {c.stage for c in contexts}
  assert stages >= ({"requester_initial", "requester_after_response", "centralized"}
                    if pool == "capability" else
                    {"sender_initial", "receiver_after_request", "sender_after_obtain",
                     "sender_intent", "receiver_query"})
  shared = [c.episode_id for c in contexts
            if split_audit.prompt_sha256(c) in train_prompts]
  assert not shared, (pool, shared[:5])


def test_training_prompts_are_mostly_distinct():
  rows = data.forward_rows(suites.forward("train"))
  assert len(rows) == 1920
  assert len({split_audit.row_sha256(r) for r in rows}) >= 1500
  assert len({r.target for r in rows}) >= 500          # quantities follow the facts


def test_row_records_the_hash_of_its_model_input():
  for row in data.forward_rows(suites.forward("train")[:2], "json"):
    record = split_audit.row_record(row)
    text = json.dumps(chat.messages(row.context, "json"), sort_keys=True)
    assert record["prompt_sha256"] == hashlib.sha256(text.encode()).hexdigest()
  rows = data.forward_rows(suites.forward("train")[:2])
  assert len({split_audit.row_record(r)["prompt_sha256"] for r in rows}) == len(rows)


def test_facts_are_in_the_observation_and_drive_the_obtain_step():
  eps = suites.forward("train")
  assert {e.goal_count for e in eps} == set(facts.GOAL_COUNTS)
  held_some = 0
  for ep in eps[::7]:
    obs = E.sender_context(ep).observation
    assert obs["goal_count"] == ep.goal_count and obs["inventory"] == ep.inventory(ep.sender)
    raw = templates.get(ep.template).branch(ep.binding, ep.sender, ep.receiver, ep.goal_count)
    need, got = raw.sender_path[0], ep.branch().sender_path[0]
    assert need.skill == got.skill == "resource.obtain"
    held = ep.inventory(ep.sender).get(need.args["item"], 0)
    assert got.args["q"] == need.args["q"] - held >= 1
    assert ep.branch().sender_path[1:] == raw.sender_path[1:]
    held_some += held > 0
  assert held_some > 20
  spare = {i for e in eps for i in e.inventory(e.sender)} - {"wooden_pickaxe"}
  assert len(spare) >= 5                                # distractors beside the material


def test_facts_are_deterministic_and_drawn_on_their_side():
  args = ("chest_ab", templates.get("chest_ab").bindings, 123, suites.AGENTS)
  for side in facts.SIDES:
    first = facts.sample(*args, side)
    assert facts.sample(*args, side) == first
    assert all(facts.view_side(facts.view_key("chest_ab", a, first.goal_count,
                                              {"wooden_pickaxe": 1, **dict(inv)})) == side
               for a, inv in first.inventories)
  assert facts.sample(*args, "train") != facts.sample(*args, "eval")
  with pytest.raises(ValueError, match="side"):
    facts.sample(*args, "validation")
  assert facts.sample(*args, "eval", goal_counts=(1,)).goal_count == 1
  assert not facts.touched("chest_ab") & {"sand", "coal", "oak_planks"}
  assert {"oak_planks", "oak_log", "stick"} <= facts.touched("planks_or_sticks")


def test_the_view_partition_is_a_fixed_hash_with_the_eval_share():
  keys = [("chest_ab", "agent_a", k, (("cobblestone", n), ("wooden_pickaxe", 1)))
          for k in facts.GOAL_COUNTS for n in range(1, 1001)]
  share = sum(facts.view_side(k) == "eval" for k in keys) / len(keys)
  assert abs(share - facts.EVAL_SHARE) < 0.02            # 4,000 keys: sd of the share ~0.007
  # sha256 of the key's repr, not Python's salted hash(): the same side in every process
  digest = hashlib.sha256(repr(keys[0]).encode()).digest()
  expect = "eval" if int.from_bytes(digest[:8], "big") < facts.EVAL_SHARE * 2 ** 64 else "train"
  assert facts.view_side(keys[0]) == expect


def _side(ep, agent):
  return facts.view_side(facts.view_key(ep.template, agent, ep.goal_count, ep.inventory(agent)))


def test_pairs_share_facts_and_every_pool_keeps_to_its_side():
  training = ("train", "cross_product_seen", "capability_train")
  evaluation = ("heldout", "intervention", "heldout_template", "cross_product", "capability",
                "visibility")
  for name in training + evaluation:
    eps = suites.suite(name)
    worlds = collections.defaultdict(set)
    for ep in eps:
      worlds[(ep.template, ep.variant)].add((ep.goal_count, ep.layout.agent_starts["agent_a"][1],
                                             ep.layout.agent_starts["agent_b"][1]))
      side = "train" if name in training else "eval"
      assert all(_side(ep, a) == side for a in suites.AGENTS), (name, ep.episode_id)
    assert all(len(v) == 1 for v in worlds.values())    # both bindings / modes, one world


def _sender_inventory_stats(eps):
  """(share of sender views holding 3+ distinct items, mean largest count held)."""
  invs = [ep.inventory(ep.sender) for ep in eps]
  return (sum(len(i) >= 3 for i in invs) / len(invs),
          sum(max(i.values()) for i in invs) / len(invs))


def test_training_and_evaluation_inventories_come_from_one_distribution():
  # Rejecting evaluation worlds against the training views skewed evaluation to busy
  # inventories (94% vs 62% with 3+ items, largest count 11.9 vs 9.9); a side partition does not.
  train = _sender_inventory_stats(suites.forward("train", per_template=240))
  for split in ("intervention", "heldout"):
    busy, largest = _sender_inventory_stats(suites.forward(split))
    assert abs(busy - train[0]) < 0.1 and abs(largest - train[1]) < 1.5, (split, train)


def test_split_table_reports_zero_shared_prompts():
  table = split_audit.split_table(["direct_dsl"], "heldout", "intervention")
  by = {r["split"]: r for r in table}
  assert by["train"]["rows"] == 1920 and by["train"]["distinct_prompts"] >= 1500
  assert by["intervention"]["rows"] == 640 and by["heldout"]["rows"] == 512
  assert by["intervention"]["prompts_in_train"] == by["heldout"]["prompts_in_train"] == 0
  assert by["heldout"]["distinct_prompts"] >= 480
  # with a sender drill its rows are a split of their own and count as training inputs
  drilled = {r["split"]: r for r in split_audit.split_table(
      ["direct_dsl"], "heldout", "intervention", drill_per_template=8)}
  assert drilled["drill"]["rows"] == 8 * 8 * 2 and drilled["drill"]["distinct_prompts"] > 100
  assert drilled["heldout"]["prompts_in_train"] == 0
  assert drilled["heldout"]["targets_in_train"] >= by["heldout"]["targets_in_train"]


def test_a_wider_training_pool_keeps_the_papers_worlds_and_the_evaluation_pools_disjoint():
  paper = suites.forward("train")
  wide = suites.forward("train", per_template=120)
  assert len(wide) == 2 * len(paper)
  by_id = {e.episode_id: e for e in wide}
  assert all(by_id[e.episode_id] == e for e in paper)        # the paper's worlds come first
  for bad in (61, 0, suites.TRAIN_PER_TEMPLATE_MAX + 2):
    with pytest.raises(ValueError, match="per_template"):
      suites.forward("train", per_template=bad)
  with pytest.raises(ValueError, match="only the train split"):
    suites.forward("heldout", per_template=16)
  table = split_audit.split_table(["direct_dsl"], "heldout", "intervention",
                                  train_per_template=120)
  by = {r["split"]: r for r in table}
  assert by["train"]["rows"] == 3840
  assert by["intervention"]["prompts_in_train"] == by["heldout"]["prompts_in_train"] == 0
  widest = suites.forward("train", per_template=suites.TRAIN_PER_TEMPLATE_MAX)[-2:]
  assert all(_side(e, a) == "train" for e in widest for a in suites.AGENTS)
