"""Suites: the paper's cluster counts, balance, pairing, disjointness and visibility views."""
import collections
import dataclasses

import pytest

from agents.gencoord import episode as E, facts, protocol, structure, suites, templates
from agents.gencoord.policies.composer import ProgramPolicy
from envs.minecraft.layout import make_layout


@pytest.mark.parametrize("name,clusters", [("train", 480), ("heldout", 128),
                                           ("intervention", 160), ("heldout_template", 80),
                                           ("cross_product", 60), ("capability", 40),
                                           ("capability_train", 160),
                                           ("visibility", 96)])
def test_counts(name, clusters):
  eps = suites.suite(name)
  assert len(suites.clusters(eps)) == clusters == suites.COUNTS[name]
  assert len(eps) == 2 * clusters                      # two role permutations each
  assert {e.role_view for e in eps} == {0, 1}


def test_eight_templates_four_families_balanced():
  eps = suites.forward("heldout")
  per = collections.Counter((e.template, e.binding) for e in eps if e.role_view == 0)
  assert len(suites.CORE) == 8
  assert {templates.get(t).family for t in suites.CORE} == set(templates.FAMILIES)
  for t in suites.CORE:
    b1, b2 = templates.get(t).bindings
    assert per[(t, b1)] == per[(t, b2)] == 8           # 16 per template, balanced


def test_binding_pairs_share_receiver_view_until_request():
  eps = [e for e in suites.forward("intervention") if e.role_view == 1]
  by_world = collections.defaultdict(list)
  for e in eps:
    by_world[(e.template, e.variant)].append(e)
  for pair in by_world.values():
    assert len(pair) == 2 and pair[0].binding != pair[1].binding
    assert pair[0].goal_count == pair[1].goal_count and pair[0].layout == pair[1].layout
    a, b = (E.receiver_context(e, None) for e in pair)
    assert (a.observation, a.prior, a.agent, a.peer) == (b.observation, b.prior, b.agent, b.peer)
    s0, s1 = (E.sender_context(e) for e in pair)
    assert s0.observation["active_binding"] != s1.observation["active_binding"]
    assert "active_binding" not in a.observation


def test_capability_pairs_identical_requester_view():
  eps = [e for e in suites.capability_suite() if e.role_view == 0]
  assert len({(e.template, e.variant) for e in eps}) == 20
  for goal_world in {(e.template, e.variant) for e in eps}:
    pair = [e for e in eps if (e.template, e.variant) == goal_world]
    assert {e.peer_mode for e in pair} == {"RAW_PROCESSOR", "FINISHED_RECEIVER"}
    a, b = (E.requester_context(e) for e in pair)
    assert a == dataclasses.replace(b, episode_id=a.episode_id)
    c = E.centralized_context(pair[0]).observation["views"][pair[0].receiver]
    assert c["workcell_mode"] == pair[0].peer_mode


def test_splits_use_disjoint_worlds():
  variants = {name: {e.variant for e in suites.suite(name)}
              for name in ("train", "heldout", "intervention", "heldout_template",
                           "cross_product", "capability", "capability_train", "visibility")}
  names = list(variants)
  for i, a in enumerate(names):
    for b in names[i + 1:]:
      assert not variants[a] & variants[b], (a, b)
  held = {e.template for e in suites.forward("heldout_template")}
  assert len(held) == 4 and not held & {e.template for e in suites.forward("train")}
  assert {templates.get(t).family for t in held} == set(templates.FAMILIES)
  assert {e.goal_count for e in suites.forward("train")} == {1, 2, 3, 4}


def test_visibility_views_project_the_public_structure():
  full, skel, nodes = (structure.render("motif_post_transform", v) for v in structure.VIEWS)
  assert "<-" in full and "<-" not in skel and "[suffix]" in skel
  assert "[" not in nodes and "transform.supply_fuel" in nodes
  assert sorted(nodes.split(" | ")) == nodes.split(" | ")
  eps = suites.visibility("skeleton")
  assert {e.view for e in eps} == {"skeleton"}
  assert collections.Counter(e.template for e in eps if e.role_view == 0) == {
      "active_order": 32, "motif_post_transform": 32, "motif_pre_transform": 32}
  # The reference program closes every motif, transform skills included.
  recs = protocol.run_forward(eps, ProgramPolicy())
  assert all(r.success for r in recs)


def test_every_branch_closes_in_the_world():
  # Every template at every goal count, in worlds drawn for that count (holdings included).
  pool = suites.forward("train") + suites.forward("heldout_template")
  for name in {e.template for e in pool}:
    base = [e for e in pool if e.template == name][:4]          # both bindings, both views
    for k in facts.GOAL_COUNTS:
      world = facts.sample(name, templates.get(name).bindings, 90_000 + k, suites.AGENTS,
                           "train", goal_counts=(k,))
      layout = make_layout(90_000 + k, suites.AGENTS,
                           extra_items={a: dict(inv) for a, inv in world.inventories})
      eps = [dataclasses.replace(e, goal_count=k, layout=layout) for e in base]
      assert {e.binding for e in eps} == set(templates.get(name).bindings)
      assert all(r.success for r in protocol.run_forward(eps, ProgramPolicy())), (name, k)


def test_unknown_suite_raises():
  with pytest.raises(KeyError):
    suites.suite("nope")
