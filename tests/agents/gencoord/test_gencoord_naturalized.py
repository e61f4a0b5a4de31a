"""Naturalized private facts: note surfaces and the model-free formation references."""
import pytest

from agents.gencoord import data, episode as E, naturalize, protocol, suites
from agents.gencoord.policies import registry as policies


def test_notes_hide_the_binding_id_and_follow_the_surface():
  ep = suites.suite("naturalized_c3")[0]
  obs = E.sender_context(ep).observation
  assert "active_binding" not in obs and ep.binding not in obs["private_note"]
  train_phrase, para = naturalize.PHRASES[ep.binding]
  assert para in obs["private_note"] and train_phrase not in obs["private_note"]
  assert naturalize.describe(ep.binding, ep.template, "c1", 0) != naturalize.describe(
      ep.binding, ep.template, "train", 0)
  with pytest.raises(ValueError):
    naturalize.describe(ep.binding, ep.template, "c9", 0)
  # Every core binding has a phrase pair, and paraphrases never reuse the training phrase.
  for b, (t, p) in naturalize.PHRASES.items():
    assert t != p and t not in p


@pytest.fixture(scope="module")
def fitted():
  rows = [(r.context, r.binding) for r in data.forward_rows(suites.suite("naturalized_train"))
          if r.stage == "sender_initial"]
  return {name: policies.make(name, rows=rows)
          for name in ("frozen_parser", "surface_table", "tfidf_nn")}


def _rate(eps, backend):
  recs = protocol.run_forward(eps, backend)
  return 100.0 * sum(r.success for r in recs) / len(recs)


def test_formation_references(fitted):
  got = {}
  for surface in ("train", "c1", "c2", "c3"):
    eps = suites.naturalized(surface)
    oracle = policies.make("oracle_factors", truth={e.episode_id: e.binding for e in eps})
    got[surface] = {"oracle": _rate(eps, oracle),
                    **{k: _rate(eps, b) for k, b in fitted.items()}}
  assert got["c1"] == {"oracle": 100.0, "frozen_parser": 100.0, "surface_table": 0.0,
                       "tfidf_nn": 100.0}
  for surface in ("c2", "c3"):      # unseen wording: keyword rule and exact lookup have nothing
    assert got[surface]["oracle"] == 100.0
    assert got[surface]["frozen_parser"] == got[surface]["surface_table"] == 0.0
  # On the training surfaces (new worlds, same sentences) exact lookup covers every case.
  assert got["train"] == {"oracle": 100.0, "frozen_parser": 100.0, "surface_table": 100.0,
                          "tfidf_nn": 100.0}
