"""The factorized rule composes over the visible task structure (visibility study, S9)."""
import collections

from agents.gencoord import episode as E, motifs, protocol, structure
from agents.gencoord.policies import composer, registry as policies
from agents.gencoord import suites
from agents.gencoord.dsl import parse
from agents.gencoord.skills import normalize_path


def _by_motif(recs) -> dict:
  motif_of = {t: m for m, t in motifs.MOTIF_TEMPLATES.items()}
  out = collections.defaultdict(list)
  for r in recs:
    out[motif_of[r.ep.template]].append(r.success)
  return {m: 100.0 * sum(v) / len(v) for m, v in out.items()}


def test_full_and_skeleton_views_recover_the_template_paths():
  rule, program = policies.make("factorized_rule"), policies.make("program")
  for view in ("full", "skeleton"):
    eps = suites.visibility(view)
    for ep in eps[::7]:
      ctx = E.sender_context(ep)
      got, want = parse(rule.generate([ctx])[0]), parse(program.generate([ctx])[0])
      assert normalize_path(got.self_plan, ep.sender) == normalize_path(want.self_plan,
                                                                        ep.sender)
      assert (normalize_path(got.peer_requests[0].requested_plan, ep.receiver) ==
              normalize_path(want.peer_requests[0].requested_plan, ep.receiver))
    assert _by_motif(protocol.run_forward(eps, rule)) == {
        "familiar": 100.0, "post_transform": 100.0, "pre_transform": 100.0}


def test_node_only_loses_the_unmarked_post_handoff_destination():
  """Node-only drops branch labels: the destination of the post-handoff deliver is not marked
  with `bind=`, so the rule takes the first listed one (chest_a) for both bindings."""
  recs = protocol.run_forward(suites.visibility("node_only"),
                              policies.make("factorized_rule"))
  assert _by_motif(recs) == {"familiar": 100.0, "post_transform": 50.0, "pre_transform": 100.0}
  failed = [r for r in recs if not r.success]
  assert {(r.ep.template, r.ep.binding) for r in failed} == {("motif_post_transform",
                                                              "CHEST_B")}
  assert all("dst=chest_a" in r.texts[-1] for r in failed)


def test_rule_reads_the_structure_not_the_template(monkeypatch):
  monkeypatch.setattr(composer, "MEMOISE", False)
  real = structure.render

  def swapped(name, view="full", *args, **kwargs):   # a public structure with chests swapped
    text = real(name, view, *args, **kwargs)
    return text.replace("dst=chest_a", "dst=TMP").replace("dst=chest_b", "dst=chest_a") \
        .replace("dst=TMP", "dst=chest_b")
  monkeypatch.setattr(structure, "render", swapped)
  eps = [e for e in suites.visibility("full") if e.template == "motif_post_transform"]
  recs = protocol.run_forward(eps, policies.make("factorized_rule"))
  assert not any(r.success for r in recs)
  assert {r.failure_code for r in recs} <= set(protocol.FAIL_CODES)


def test_rule_scales_quantities_and_declines_unlisted_structures():
  # The structure lists per-order quantities; held-out clusters run at goal counts 1-4 and
  # the sender's obtain is net of its holdings.
  eps = suites.forward("heldout")
  assert {e.goal_count for e in eps} == {1, 2, 3, 4}
  assert all(r.success for r in protocol.run_forward(eps, policies.make("factorized_rule")))
  # Factorised templates list no nodes: no proposal (a recorded failure, not a crash).
  recs = protocol.run_forward(suites.cross_product()[:4], policies.make("factorized_rule"))
  assert {r.failure_code for r in recs} == {"CONTRACT_REJECT"}
