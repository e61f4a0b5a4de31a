"""The learned-backend pipeline end to end on a tiny budget (quickstart in miniature)."""
import json
import os

import pytest

from configs import quickstart
from configs.gencoord import learned as study_configs
from experiments import registry
from experiments.gencoord import learned as gencoord_learned, sender_fit
from agents.gencoord.learned import validation
from configs.gencoord import sender_fit as sender_fit_config
from lib.backends.flax_backend import FlaxBackend
from lib.backends.protocol import SamplingParams

pytestmark = pytest.mark.long_module(80)   # scheduled first: tests/conftest.py


def _tiny(c):
  c.model.overrides.update(hidden_size=32, num_layers=1, num_heads=2, num_kv_heads=1,
                           head_dim=16, intermediate_size=64)
  c.model.vocab_size = 400
  c.max_rows = 64
  c.train.update(epochs=1, batch=16, log_every=1, ckpt_every=2, batching="rows")
  c.eval.update(max_clusters=2, timing_clusters=1, throughput=True, n_resamples=200)
  return c


def test_quickstart_pipeline_tiny(tmp_path):
  c = _tiny(quickstart.get_config("debug=True,constrained=True"))
  assert [x["name"] for x in c.eval.conditions] == ["dsl", "dsl_constrained"]
  assert c.experiment == "gencoord/learned"     # the quickstart names its pipeline directly
  assert registry.EXPERIMENTS[c.experiment] == "experiments.gencoord.learned"
  c.debug = True                              # launch.py records the :debug arg the same way
  out = gencoord_learned.run(c, str(tmp_path))
  row = out["table"][0]
  assert row["condition"] == "dsl" and row["episodes"] == 4 and row["clusters"] == 2
  assert 0 <= row["success_%"] <= 100 and row["ttc_p50_s"] > 0
  assert row["batched_eps_per_s"] > 0 and row["input_tok"] > 50
  assert out["bar_met"] in (True, False)
  for f in ("summary.md", "summary.json", "train_loss.png", "success_by_template.png",
            "results.jsonl", "data/direct_dsl.jsonl", "tokenizer/tokenizer.json"):
    assert os.path.exists(tmp_path / f), f
  assert os.listdir(tmp_path / "tb")
  # A debug run says so: title, strict summary.json, and beside the bar verdict.
  md = (tmp_path / "summary.md").read_text()
  assert md.splitlines()[0].endswith("(debug run)") and "nan" not in md
  bar = next(line for line in md.splitlines() if line.startswith("**Bar**"))
  assert "debug run" in bar
  data = json.loads((tmp_path / "summary.json").read_text(),
                    parse_constant=lambda c: pytest.fail(f"bare {c} in summary.json"))
  assert data["debug"] is True
  assert out["figures"] == ["train_loss.png", "success_by_template.png", "ttc.png"]
  for f in out["figures"]:
    assert f"]({f})" in md and (tmp_path / f).read_bytes()[:4] == b"\x89PNG"
  train = out["training"][0]
  # The drill lead first (3 epochs of the debug drill's 320 sender rows, 20 worlds per template,
  # agent's own sections only, at 32 a batch: 30 steps), then 4 batches of 16 full rows, each
  # followed by a drill batch.
  assert train["rows"] == 64 and train["drill_rows"] == 320
  assert train["drill_lead_steps"] == 30 and train["steps"] == 30 + 8
  assert len((tmp_path / "data/direct_dsl_drill.jsonl").read_text().splitlines()) == 320
  # Rerun: training resumes at its final checkpoint, finished episodes are skipped.
  again = gencoord_learned.run(c, str(tmp_path))
  assert again["table"][0]["success_%"] == row["success_%"]
  rows = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
  assert len(rows) == 8 and rows[0]["condition"] == "dsl"
  # Another run of the same model (same rows, tokenizer, config, seed) copies it instead of
  # training: no step is trained there, and its episodes come out the same.
  (tmp_path / "config.json").write_text(c.to_json_best_effort())   # as launch.py writes it
  c.reuse_models_from = (str(tmp_path / "nowhere"), str(tmp_path))
  reused = gencoord_learned.run(c, str(tmp_path / "reuse"))
  assert reused["training"][0]["trained_in"] == str(tmp_path)
  assert reused["training"][0]["steps"] == train["steps"]
  assert reused["table"][0]["success_%"] == row["success_%"]
  again_rows = [json.loads(line)
                for line in (tmp_path / "reuse/results.jsonl").read_text().splitlines()]
  assert [(r["episode_id"], r["success"], r["output_tokens"]) for r in again_rows] == [
      (r["episode_id"], r["success"], r["output_tokens"]) for r in rows]
  c.reuse_models_from = ()
  # The same raw model decoded under the Short DSL regex (a commitment that ends parses by
  # construction, tests/agents/gencoord/test_learned_constrained.py; this 1-layer model can run
  # into the 256-token cap inside the grammar): never less valid than free decoding
  constrained = [r for r in rows if r["condition"] == "dsl_constrained"]
  free = [r for r in rows if r["condition"] == "dsl"]
  assert len(constrained) == 4
  assert sum(r["raw_valid"] for r in constrained) >= sum(r["raw_valid"] for r in free)
  # The sender-fit diagnostic re-scores the exported model. Its training set is exactly the
  # run's sender rows (found by id and prompt hash), and on the validation split it agrees with the
  # validation the run itself made at its last step (training-time params there, the HF export
  # here).
  fit_c = sender_fit_config.get_config("debug=True")
  fit_c.update(run_dir=str(tmp_path), max_rows=0)
  fit = {r["set"]: r for r in sender_fit.run(fit_c, str(tmp_path / "fit"))}
  trained = [json.loads(line) for line in (tmp_path / "data/direct_dsl.jsonl").open()]
  assert fit["train"]["rows"] == sum(r["stage"].startswith("sender") for r in trained)
  assert fit["drill"]["rows"] == len(range(0, 320, fit_c.drill_stride))
  last = validation.history(str(tmp_path / "models/direct_dsl/s0/validation.jsonl"))[-1]
  assert last["step"] == train["steps"]
  wrong = sum(sum(v.values()) for k, v in last["errors"].items() if "/sender_" in k)
  assert fit["validation"]["rows"] == 320
  assert fit["validation"]["full_exact_%"] == pytest.approx(100 * (1 - wrong / 320))
  for r in fit.values():
    assert 0 <= r["own_sections_exact_%"] <= 100
  # Backend choice (a): the exported checkpoint serves through lib.backends's Flax backend.
  llm = FlaxBackend.from_pretrained(str(tmp_path / "models/direct_dsl/s0/hf"))
  reply = llm.generate([[{"role": "user", "content": "stage: sender_initial"}]],
                       SamplingParams(max_tokens=4))
  assert reply[0].ok and reply[0].output_tokens <= 4


def test_study_configs_are_complete():
  for study in ("representation", "backend", "request", "horizon", "feedback", "composition",
                "visibility"):
    c = study_configs.get_config(f"study={study},debug=True")
    names = {d["name"] for d in c.eval.conditions}
    assert c.eval.reference in names and set(c.paper) <= names
    assert {d["recipe"] for d in c.eval.conditions if "recipe" in d} <= set(c.recipes)
    assert all(("recipe" in d) != ("backend" in d) for d in c.eval.conditions)
  vis = study_configs.get_config("study=visibility")
  assert len(vis.eval.conditions) == 9 and vis.eval.max_clusters == 0
  assert {(d["name"].split("/")[0], d["view"]) for d in vis.eval.conditions} == {
      (m, v) for m in ("dsl", "freeform", "rule") for v in ("full", "skeleton", "node_only")}


def test_visibility_study_tiny(tmp_path):
  """Frozen checkpoints (trained once, Full view) and the rule under every view; the matrix."""
  c = _tiny(study_configs.get_config("study=visibility,debug=True"))
  c.eval.update(max_clusters=3, timing_clusters=0, throughput=False)
  c.train.ckpt_every = 4
  out = gencoord_learned.run(c, str(tmp_path))
  assert sorted(out["training"][i]["model"] for i in range(2)) == ["direct_dsl/s0",
                                                                 "freeform/s0"]
  # Each recipe's model has its own BPE; the token counts use the run's counting BPE.
  toks = [json.loads((tmp_path / p / "tokenizer.json").read_text())["model"]["vocab"]
          for p in ("models/direct_dsl/tokenizer", "models/freeform/tokenizer", "tokenizer")]
  assert toks[0] != toks[1] and toks[2] not in toks[:2]
  rows = [json.loads(x) for x in (tmp_path / "results.jsonl").read_text().splitlines()]
  assert len(rows) == 9 * 6                    # 9 conditions x 3 clusters x 2 role views
  for r in rows:                               # each condition ran on its own view's pool
    assert r["view"] == r["condition"].split("/")[1]
  assert {r["template"] for r in rows} == {"active_order", "motif_post_transform",
                                           "motif_pre_transform"}    # spread: every motif
  matrix = {(m["method"], m["view"]): m for m in out["visibility"]}
  assert len(matrix) == 9
  rule_full = matrix[("Factorized rule", "Full")]
  assert [rule_full[f"{k}_%"] for k in ("familiar", "post_transform", "pre_transform")] == [
      100.0] * 3
  assert rule_full["post_transform_paper_%"] == 100.0
  assert matrix[("Short DSL", "Node-only")]["familiar_paper_%"] == 18.2
  assert os.path.exists(tmp_path / "visibility_matrix.png")
  assert "visibility matrix" in (tmp_path / "summary.md").read_text()


def test_per_seed_table():
  from agents.gencoord.learned import report
  rows = [{"seed": s, "success": ok} for s, ok in
          [(0, True), (0, True), (1, True), (1, False), (2, False), (2, False)]]
  out = report.per_seed({"dsl": rows}, [{"name": "dsl"}])[0]
  assert (out["seed 0"], out["seed 1"], out["seed 2"]) == (100.0, 50.0, 0.0)
  assert out["mean"] == 50.0 and abs(out["sd"] - 50.0) < 1e-9   # sample SD of 100, 50, 0
  one = report.per_seed({"dsl": rows[:2]}, [{"name": "dsl"}])[0]
  assert one["mean"] == 100.0 and one["sd"] != one["sd"]          # NaN with one seed


def test_contrast_batching_keeps_paired_rows_and_rejects_unknown_modes():
  from agents.gencoord.learned import training_recipes
  config = quickstart.get_config("debug=True")
  every = training_recipes.get("direct_dsl").rows()
  rows = every[:64]
  config.train.batching = "rows"
  assert gencoord_learned._batching(config, rows) == (rows, None)
  config.train.batching = "contrast"
  kept, groups = gencoord_learned._batching(config, rows + every[64:65])
  assert len(kept) == 64 and len(groups) == 64 and every[64] not in kept
  assert sorted(groups) == sorted(4 * sorted(set(groups)))
  assert {r.binding for r in kept} == {r.binding for r in rows}
  config.train.batching = "stratified"
  with pytest.raises(ValueError, match="valid: 'rows', 'contrast'"):
    gencoord_learned._batching(config, rows)
