"""GenCoord experiments end to end (debug configs): exact results, resumption, benchmark."""
import importlib.util
import json
import os

import pytest

from configs import common
from experiments import registry

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def _config(name, arg="debug=True"):
  path = os.path.join(ROOT, "configs", f"{name}.py")
  spec = importlib.util.spec_from_file_location("_cfg_" + name.replace("/", "_"), path)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  config = module.get_config(arg)
  if "debug" not in config:   # launch.py records the :debug arg the same way
    config.debug = common.debug_switch(module.get_config, arg)
  return config


def _check_report(workdir, figure="success.png"):
  """summary.json is strict JSON labelled as a debug run; summary.md says so; the PNG exists."""
  text = (workdir / "summary.json").read_text()
  data = json.loads(text, parse_constant=lambda c: pytest.fail(f"bare {c} in summary.json"))
  assert data["debug"] is True
  md = (workdir / "summary.md").read_text()
  assert md.splitlines()[0].endswith("(debug run)") and "nan" not in md
  with open(workdir / figure, "rb") as f:
    assert f.read(8) == b"\x89PNG\r\n\x1a\n"
  assert f"]({figure})" in md


def _rows(workdir):
  with open(os.path.join(workdir, "results.jsonl")) as f:
    return [json.loads(line) for line in f]


def test_request_intervention_debug(tmp_path):
  config = _config("gencoord/request")
  summary = registry.get(config.experiment)(config, str(tmp_path))
  _check_report(tmp_path)
  assert summary["success"] == {"true_request": 100.0, "request_removed": 50.0,
                                "same_template_alternative": 0.0, "rule_minimal_request": 100.0}
  md = (tmp_path / "summary.md").read_text()
  assert "Paired differences" in md and "| true_request |" in md
  n = len(_rows(tmp_path))
  assert n == 4 * 2 * config.max_clusters
  registry.get(config.experiment)(config, str(tmp_path))       # resume: nothing re-run
  assert len(_rows(tmp_path)) == n


def test_feedback_debug_field_fidelity(tmp_path):
  config = _config("gencoord/feedback")
  summary = registry.get(config.experiment)(config, str(tmp_path))
  _check_report(tmp_path)
  assert summary["success"] == {"requester_local": 50.0, "correct_feedback": 100.0,
                                "counterfactual_feedback": 0.0, "centralized": 100.0}
  blocks = {r["comparison"]: r for r in summary["pair_block_paired"]}
  n_pairs = config.max_clusters // 2
  assert blocks[f"correct_feedback - requester_local ({n_pairs} blocks)"]["ci95_pp"] == \
      "[50.0, 50.0]"
  n = 2 * config.max_clusters
  for row in summary["field_fidelity"]:
    assert row["matches_injected"] == f"{n}/{n}"
    expect_true = n if row["field"].startswith("goal") else 0
    assert row["matches_true_world"] == f"{expect_true}/{n}"


def test_composition_debug(tmp_path):
  config = _config("gencoord/composition")
  summary = registry.get(config.experiment)(config, str(tmp_path))
  _check_report(tmp_path)
  assert summary["success"] == {"case_table": 0.0, "explicit_factor_composer": 100.0}


def test_benchmark_debug(tmp_path):
  config = _config("gencoord/bench")
  summary = registry.get(config.experiment)(config, str(tmp_path))
  assert summary["episodes_per_s"] > 0 and summary["baseline_episodes_per_s"] > 0
  assert "ratio" in (tmp_path / "summary.md").read_text()


def test_data_builder_debug(tmp_path):
  config = _config("gencoord/data")
  table = registry.get(config.experiment)(config, str(tmp_path))
  by_file = {r["file"]: r for r in table}
  assert by_file["heldout_dsl.jsonl"]["rows_sender_initial"] == 256
  assert by_file["heldout_dsl.jsonl"]["rows_receiver_after_request"] == 256
  with open(tmp_path / "capability_dsl.jsonl") as f:
    first = json.loads(f.readline())
  assert first["stage"] == "requester_initial" and first["target"].startswith("SELF ")
  assert first["prompt"] and first["target"] not in first["prompt"]


def test_template_shift_debug(tmp_path):
  config = _config("gencoord/template_shift")
  summary = registry.get(config.experiment)(config, str(tmp_path))
  _check_report(tmp_path)
  assert summary["success"] == {"rule_minimal_request": 100.0, "program_reference": 100.0,
                                "case_table": 0.0, "tfidf_nn": 0.0}


def test_horizon_debug(tmp_path):
  config = _config("gencoord/horizon")
  summary = registry.get(config.experiment)(config, str(tmp_path))
  _check_report(tmp_path)
  assert summary["success"] == {"multi_step": 100.0, "single_step": 100.0}
  calls = {r["condition"]: r["model_calls"] for r in _rows(tmp_path)}
  assert calls == {"multi_step": 2, "single_step": 3}


def test_naturalized_debug(tmp_path):
  config = _config("gencoord/naturalized", "debug=True,surface=c2")
  summary = registry.get(config.experiment)(config, str(tmp_path))
  assert summary["success"]["oracle_factors"] == 100.0
  assert summary["success"]["frozen_parser"] == summary["success"]["surface_table"] == 0.0


def test_sender_probe_debug(tmp_path):
  config = _config("gencoord/sender_probe")
  table = registry.get(config.experiment)(config, str(tmp_path))
  assert [r["numbers"] for r in table] == ["digits", "whole"]
  data = json.loads((tmp_path / "summary.json").read_text(),
                    parse_constant=lambda c: pytest.fail(f"bare {c} in summary.json"))
  assert data["debug"] is True and len(data["table"]) == 2
  for row in table:
    assert row["steps"] == 20 and row["rows_seen"] == 20 * config.train.batch
    assert 0 <= row["test_exact_%"] <= 100 and 0 <= row["train_exact_%"] <= 100


def test_drill_probe_debug(tmp_path):
  """The drill probe trains on drill rows only, validates every half epoch on validation senders
  whose own-section prompts are no drill prompt, and reports 'never reached' as null."""
  from agents.gencoord import data, suites
  from agents.gencoord.learned import drill, training_recipes
  config = _config("gencoord/drill_probe")
  recipe = training_recipes.get(config.recipe)
  [row] = registry.get(config.experiment)(config, str(tmp_path))
  drill_rows = drill.drill_rows(config.drill_clusters_per_template, config.recipe)
  assert row["drill_rows"] == len(drill_rows) and row["steps"] == -(-len(drill_rows) // 32)
  with open(tmp_path / "validation.jsonl") as f:
    steps = [json.loads(line)["step"] for line in f]
  assert steps and [int(p.split(":")[0]) for p in row["trajectory"].split(", ")] == steps
  senders = [r for r in data.forward_rows(suites.suite(config.split), recipe.surface,
                                                 recipe.horizon)
             if r.stage.startswith("sender")][:config.max_val_rows]
  assert row["validation_rows"] == len(senders) == config.max_val_rows
  assert not {drill.drill_sha256(r) for r in senders} & {drill.drill_sha256(r) for r in drill_rows}
  if row["validation_exact_%"] < 95:
    assert row["first_step_at_95%"] is None
  json.loads((tmp_path / "summary.json").read_text(),
             parse_constant=lambda c: pytest.fail(f"bare {c} in summary.json"))
