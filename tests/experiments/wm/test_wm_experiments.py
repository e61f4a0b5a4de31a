"""wm_data -> wm_eval end to end on TextWorld + the generated ALFWorld game (no JVM, ~1 min)."""
import json
import os

import pytest

pytest.importorskip("alfworld")

from agents.wm import data  # noqa: E402
from configs.wm import data as wm_data_config  # noqa: E402
from configs.wm import eval as wm_eval_config  # noqa: E402
from experiments.wm import data as wm_data  # noqa: E402
from experiments.wm import eval as wm_eval  # noqa: E402


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
  c = wm_data_config.get_config("debug")
  c.scienceworld.enabled = False
  c.textworld.train_seeds, c.textworld.eval_seeds = [1], [2]
  work = str(tmp_path_factory.mktemp("wm_data"))
  wm_data.run(c, work)
  return work, c


def test_wm_data_outputs(data_dir):
  work, c = data_dir
  summary = json.load(open(os.path.join(work, "summary.json")))["summary"]
  train = data.load_samples(os.path.join(work, "train.jsonl"))
  mis = data.load_samples(os.path.join(work, "train_mis.jsonl"))
  heldout = data.load_samples(os.path.join(work, "heldout.jsonl"))
  assert summary["train"] == len(train) == min(c.n_train, summary["train_pool"]) > 0
  assert heldout and not {h.key for h in heldout} & {t.key for t in train}
  assert [m.obs for m in mis] == [t.obs for t in train]
  assert all(m.target != m.next_obs for m in mis)
  assert "not real data" in summary["alfworld_source"]
  # rerunning resumes: no episode is played twice
  rows_before = open(os.path.join(work, "results.jsonl")).read()
  wm_data.run(c, work)
  assert open(os.path.join(work, "results.jsonl")).read() == rows_before


def test_wm_eval_tables_and_plots(data_dir, tmp_path):
  work, _ = data_dir
  c = wm_eval_config.get_config("debug")
  c.scienceworld.enabled = False
  c.textworld.train_seeds, c.textworld.eval_seeds = [1], [2]
  c.textworld.games_dir = os.path.join(work, "textworld_games")   # reuse the generated games
  c.runs = [("alfworld", "list"), ("textworld", "no-list")]
  c.samples, c.n_resamples = 2, 200
  c.heldout = os.path.join(work, "heldout.jsonl")
  out = str(tmp_path / "eval")
  wm_eval.run(c, out)
  result = json.load(open(os.path.join(out, "summary.json")))
  table, summary = result["table"], result["summary"]
  assert len(table) == 2 * len(c.conditions)
  assert {r["condition"] for r in table} == set(c.conditions)
  for r in table:
    assert 0 <= r["pass@1"] <= r["pass@2"] <= 100 and r["turns"] <= c.max_steps
    assert r["pass@2_lo"] <= r["pass@2"] <= r["pass@2_hi"]
  assert len(summary["coverage_tests"]) == 2        # one condition pair per (env, regime)
  assert "rule-based" in summary["prediction"]["judge"]
  for env, regime in c.runs:
    with open(os.path.join(out, f"passk_{env}_{regime}.png"), "rb") as f:
      assert f.read(4) == b"\x89PNG"
  md = open(os.path.join(out, "summary.md")).read()
  assert "scripted" in md and "## Domain breakdown" in md and "## Chain-of-thought length" in md
  # one domain per env here, so its pass@k is the env's pass@k
  dom = {(r["env"], r["condition"]): r for r in summary["domains"]}
  assert {r["domain"] for r in summary["domains"] if r["env"] == "alfworld"} == \
      {"pick_and_place_simple"}
  for r in table:
    d = dom[(r["env"], r["condition"])]
    assert d["tasks"] == len(c.textworld.eval_seeds if r["env"] == "textworld" else [0])
    assert d["pass@1"] == pytest.approx(r["pass@1"]) and d["pass@2"] == pytest.approx(r["pass@2"])
  # the scripted stand-in thinks "Try something." (2 words) or "Unsure." (1 word, no action)
  for r in summary["cot"]:
    assert r["replies"] > 0 and r["think_frac"] == 1.0
    assert r["think_words_mean"] == pytest.approx(1 + r["action_frac"])
    assert r["think_words_median"] in (1.0, 1.5, 2.0)


def test_wm_eval_seen_levels_run_is_labelled_and_plays_training_games(data_dir, tmp_path):
  work, _ = data_dir
  c = wm_eval_config.get_config("debug")
  c.scienceworld.enabled, c.alfworld.enabled = False, False
  c.textworld.train_seeds, c.textworld.eval_seeds = [1], [2]
  c.textworld.games_dir = os.path.join(work, "textworld_games")
  c.runs = [("textworld", "list", "train"), ("textworld", "list")]
  c.samples, c.n_resamples, c.heldout = 2, 200, ""
  out = str(tmp_path / "eval_seen")
  wm_eval.run(c, out)
  table = json.load(open(os.path.join(out, "summary.json")))["table"]
  assert {r["regime"] for r in table} == {"list@seen", "list"}
  rows = [json.loads(x) for x in open(os.path.join(out, "results.jsonl"))]
  games = {r["regime"]: {e["info"]["task_id"] for e in r["transcript"] if e["type"] == "action"}
           for r in rows}
  assert all("_s1/" in t for t in games["list@seen"]) and all("_s2/" in t for t in games["list"])
  assert os.path.exists(os.path.join(out, "passk_textworld_list@seen.png"))
  c.runs = [("textworld", "list", "valid")]
  with pytest.raises(ValueError, match="split"):
    wm_eval.run(c, str(tmp_path / "bad"))
