"""End to end (SCRIPTED policy): conpact_eval on Sokoban, comparator vs independent labels,
state injection, and ConPAct-R/S curation of the logged trajectories."""
import json
import os

import pytest

from agents.conpact import compare, curate, labels, schemas, textenv
from configs.conpact import scripted as conpact_scripted
from experiments.conpact import eval as conpact_eval
from lib.models import tokenizer as tokenizer_lib

pytestmark = pytest.mark.long_module(60)   # scheduled first: tests/conftest.py

KEEP = ("assertion", "assertion+true_facts", "conpact_i", "react")


def small_config():
  c = conpact_scripted.get_config("debug=True")
  c.envs = ["sokoban"]
  c.instances = 3
  c.rollouts = 2
  c.scripted.noise = {"perception": 0.4, "recheck_miss": 0.1}
  c.conditions = [x for x in c.conditions if x["name"] in KEEP]
  return c


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
  d = str(tmp_path_factory.mktemp("conpact"))
  conpact_eval.run(small_config(), d)
  return d


def load(d):
  with open(os.path.join(d, "summary.json")) as f:
    return json.load(f)["summary"]


def test_comparator_precision_recall_and_injection(run_dir):
  s = load(run_dir)
  comp = {r["condition"]: r for r in s["comparator"]}
  for name in ("assertion", "conpact_i"):
    assert comp[name]["tp"] > 0  # contradictions really were injected
    assert comp[name]["precision"] == 1.0 and comp[name]["recall"] == 1.0
  rows = {r["condition"]: r for r in s["table"]}
  assert rows["assertion+true_facts"]["D_step"] == 0.0 < rows["assertion"]["D_step"]
  assert rows["assertion+true_facts"]["actor_correct"] == 1.0
  assert rows["assertion+true_facts"]["success"] >= rows["assertion"]["success"]
  assert rows["conpact_i"]["discussion_rate"] == 1.0
  md = open(os.path.join(run_dir, "summary.md")).read()
  assert "SCRIPTED" in md and "Table 18 layout" in md
  # The column counts episodes (instances x rollouts), and is named for them.
  assert all(r["episodes"] == 3 * 2 and "rollouts" not in r for r in rows.values())
  assert "| steps | episodes |" in md and "| rollouts |" not in md
  assert rows["react"]["checks"] == 0


def test_summary_is_strict_json_with_coverage_and_a_figure(run_dir):
  with open(os.path.join(run_dir, "summary.json")) as f:
    json.loads(f.read(), parse_constant=lambda c: pytest.fail(f"{c} in summary.json"))
  rows = {r["condition"]: r for r in load(run_dir)["table"]}
  for r in rows.values():
    assert {"coverage_planner", "coverage_actor", "comparable_checks"} <= set(r)
  # one role, no assertions: nothing comparable -> D is null, never 0
  assert rows["react"]["D_step"] is None and rows["react"]["comparable_checks"] is None
  assert rows["assertion"]["coverage_actor"] == 1.0 and rows["assertion"]["comparable_checks"] > 0
  assert rows["assertion"]["subgoal_adherence"] is not None
  md = open(os.path.join(run_dir, "summary.md")).read()
  assert "n/a" in md and "| nan" not in md
  assert "Failure attribution" in md and "Table 23" in md
  with open(os.path.join(run_dir, "demo.png"), "rb") as f:
    assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_labels_skip_episodes_whose_env_never_reset():
  # An env worker that hung or died at reset (host.executor=processes) leaves a row with no
  # agent summary; the comparator labels count nothing for it instead of stopping the report.
  row = {"status": "env_error", "error": "env_timeout", "agent": {},
         "transcript": []}
  conf = labels.comparator_confusion([row], policy=None, backend_seed=0,
                                     schema=schemas.get("sokoban"))
  assert (conf["tp"], conf["fp"], conf["fn"], conf["tn"], conf["precision"]) == (0, 0, 0, 0, None)


def test_labels_catch_a_broken_comparator(run_dir, monkeypatch, tmp_path):
  """Negative control: a comparator that ignores one field must lose recall."""
  real = compare.contradictions
  monkeypatch.setattr(compare, "contradictions",
                      lambda p, a, s: [c for c in real(p, a, s) if c.field != "boxes"])
  c = small_config()
  c.conditions = [x for x in c.conditions if x["name"] == "assertion"]
  conpact_eval.run(c, str(tmp_path))
  comp = load(str(tmp_path))["comparator"][0]
  assert comp["fn"] > 0 and comp["recall"] < 1.0


def test_curation_targets_are_valid_and_conflicts_stay_context(run_dir, tmp_path):
  with open(os.path.join(run_dir, "results.jsonl")) as f:
    rows = [json.loads(l) for l in f]
  sch, task = schemas.get("sokoban"), textenv.task("sokoban")
  ours = [r for r in rows if r["condition"] == "conpact_i"]
  full = curate.curate(ours, sch, task.action_names, curate.CurateConfig(success_only=False))
  sources = {ex["source"] for ex in full}
  assert {"consistent", "reconciliation", "replay"} <= sources
  for ex in full:
    assert ex["messages"][-1]["role"] == "user"
    if ex["source"] == "reconciliation":
      assert ex["messages"][-2]["role"] == "assistant"  # conflicting reply kept as context
      assert ex["messages"][-1]["content"].startswith("CONFLICT:")
    if ex["source"] == "replay":
      assert not any(m["role"] == "assistant" for m in ex["messages"])
  no_sup = curate.curate(ours, sch, task.action_names,
                         curate.CurateConfig(reconciliation_supervision=False, success_only=False))
  assert "reconciliation" not in {ex["source"] for ex in no_sup}
  # a conflicted check's original replies are never targets under consistency filtering
  conflicted_texts = set()
  for r in ours:
    calls = [e for e in r["transcript"] if e["type"] == "call"]
    for rec in r["agent"]["records"]:
      if rec["kind"] == "pair" and rec["conflicts"]:
        wrong = [role for role in ("planner", "actor")
                 if any(rec[role]["values"].get(k) != rec["truth"][k]
                        for k in rec["truth"] if rec[role]["values"].get(k) is not None)]
        conflicted_texts |= {calls[rec["calls"][role]]["text"] for role in wrong}
  assert conflicted_texts and not conflicted_texts & {ex["target"] for ex in full}

  tok = tokenizer_lib.train_tokenizer([ex["target"] for ex in full] * 2, 400, tmp_path / "tok")
  batch = curate.sft_batch(full[:4], tok, max_len=2048)
  for i, ex in enumerate(full[:4]):
    ids = batch["input_ids"][i][batch["loss_mask"][i] == 1].tolist()
    assert tok.decode(ids) == ex["target"] + tokenizer_lib.IM_END
  count = lambda ex: curate.target_tokens(ex, tok, 2048)
  budget = curate.reference_budget(full[:5], count, epochs=3)  # three epochs of a reference
  picked = curate.match_budget(full, budget, count, seed=0)
  used = sum(count(ex) for ex in picked)
  assert used <= budget and budget - used < max(count(ex) for ex in full)



def _rows_by_key(d):
  with open(os.path.join(d, "results.jsonl")) as f:
    rows = [json.loads(l) for l in f]
  out = {}
  for r in rows:
    r = {k: v for k, v in r.items() if k not in ("wall_s", "model_latency_s")}
    r["transcript"] = [{k: v for k, v in e.items() if k != "latency_s"} for e in r["transcript"]]
    out[(r["condition"], r["instance"], r["rollout"])] = r
  return out


def test_env_worker_processes_write_the_rows_inline_writes(tmp_path):
  """The Sokoban text adapter (a JAX env) in two spawned worker processes (host.executor)."""
  c = small_config()
  c.instances, c.conditions = 2, [x for x in c.conditions if x["name"] in ("react", "conpact_i")]
  conpact_eval.run(c, str(tmp_path / "inline"))
  c.host.executor, c.host.workers = "processes", 2
  conpact_eval.run(c, str(tmp_path / "processes"))
  inline, procs = _rows_by_key(str(tmp_path / "inline")), _rows_by_key(str(tmp_path / "processes"))
  assert len(inline) == 8 and procs == inline
  assert {r["status"] for r in inline.values()} >= {"success"}
