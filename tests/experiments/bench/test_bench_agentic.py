"""The agentic rollout benchmark (experiments/bench/agentic.py): its debug run end to end, checked
against the results files it leaves (not only its own flags), and the episode fingerprint."""
import glob
import importlib
import json
import os

import pytest

from configs import common
from experiments import registry
from experiments.bench import agentic as bench

pytestmark = pytest.mark.long_module(45)   # a tokenizer, a random actor, 12 rollouts

CONFIG = importlib.import_module("configs.bench.agentic")


@pytest.fixture(scope="module")
def debug_run(tmp_path_factory):
  config = CONFIG.get_config("debug=True")
  workdir = tmp_path_factory.mktemp("bench_agentic")
  summary = registry.get(config.experiment)(config, str(workdir))
  return config, workdir, summary


def _last_rows(workdir, tag: str) -> list[dict]:
  """The rows of the mode's last timed round (files <tag>_<call number>.jsonl)."""
  files = glob.glob(os.path.join(workdir, "rollouts", f"{tag}_*.jsonl"))
  last = max(files, key=lambda f: int(os.path.basename(f)[len(tag) + 1:-6]))
  with open(last, encoding="utf-8") as f:
    return [json.loads(line) for line in f if line.strip()]


def _calls(row: dict) -> list[dict]:
  return [e for e in row["transcript"] if e["type"] == "call"]


def test_config_resolves_and_rejects_unknown_args():
  for arg in ("debug=True", None):
    c = CONFIG.get_config(arg)
    assert c.experiment in registry.names()
    assert c.temperature == 1.0   # both modes sample: identical episodes are not a greedy tie
  assert CONFIG.get_config().tasks == list(importlib.import_module(
      "configs.agentic.babyai").TASKS)
  with pytest.raises(common.ConfigArgError):
    CONFIG.get_config("no_such_arg=1")


def test_both_modes_play_identical_episodes(debug_run):
  config, workdir, summary = debug_run
  n = len(config.tasks) * config.groups_per_task * config.group_size
  one, batched = _last_rows(workdir, "one"), _last_rows(workdir, "batched")
  assert len(one) == len(batched) == n == summary["episodes"]
  # The per-request keys depend on the episode and call index only, so the batch company of a
  # request changes no sampled token: same prompts, same replies, same actions in both modes.
  key = lambda r: (r["group"], r["member"])
  for a, b in zip(sorted(one, key=key), sorted(batched, key=key)):
    assert key(a) == key(b) and a["status"] == b["status"] and a["actions"] == b["actions"]
    assert [c["prompt_ids"] for c in _calls(a)] == [c["prompt_ids"] for c in _calls(b)]
    assert [c["token_ids"] for c in _calls(a)] == [c["token_ids"] for c in _calls(b)]
    assert all(0 < len(c["token_ids"]) <= config.turn_tokens for c in _calls(a))
  # Temperature 1 with a random actor: the G members of a group are not copies of each other.
  replies = {}
  for r in one:
    replies.setdefault(r["group"], set()).add(tuple(tuple(c["token_ids"]) for c in _calls(r)))
  assert all(len(v) == config.group_size for v in replies.values())
  assert summary["identical_episodes"] and summary["differing_episodes"] == 0
  # batch shape changes float reductions (log-probs), not the samples
  assert 0 <= summary["max_logprob_diff"] < 1e-3


def test_summary_counts_rates_and_load(debug_run):
  config, workdir, _ = debug_run
  text = (workdir / "summary.json").read_text()
  data = json.loads(text, parse_constant=lambda c: pytest.fail(f"bare {c} in summary.json"))
  summary, table = data["summary"], data["table"]
  assert data["debug"] is True and [r["mode"] for r in table] == [bench.BASELINE, bench.BATCHED]
  base, new = table
  one, batched = _last_rows(workdir, "one"), _last_rows(workdir, "batched")
  tokens = sum(len(c["token_ids"]) for r in one for c in _calls(r))
  calls = sum(len(_calls(r)) for r in one)
  for row in table:   # the counts are those of the results files, the same every round
    assert (row["episodes"], row["model_calls"], row["generated_tokens"]) == (
        len(one), calls, tokens) and tokens > 0 and row["same_work_every_round"]
    assert row["episodes_per_s_min"] <= row["episodes_per_s"] <= row["episodes_per_s_max"]
    assert row["tokens_per_s"] == pytest.approx(row["episodes_per_s"] * tokens / len(one))
    assert row["warmup_s"] > 0 and row["dropped"] == 0
  # one sampler call per model call alone; batched: one per step, i.e. the longest episode's calls
  assert base["max_batch"] == 1 and base["sampler_calls"] == calls
  assert new["max_batch"] == len(one)
  assert new["sampler_calls"] == max(len(_calls(r)) for r in batched) < calls
  assert base["ratio"] == base["ratio_min"] == base["ratio_max"] == 1.0
  assert new["ratio"] == pytest.approx(new["episodes_per_s"] / base["episodes_per_s"])
  assert summary["speedup_min"] <= new["ratio"] <= summary["speedup_max"]
  machine = summary["machine"]
  assert machine["rounds"] == config.rounds and not machine["own_load"]
  assert summary["noisy"] == (machine["load_1min_max"] > machine["cores"])
  for head in ("speedup_vs_one_at_a_time", "tokens_per_s_ratio"):
    assert (summary[head] is None) == summary["noisy"]
  if not summary["noisy"]:
    assert summary["speedup_vs_one_at_a_time"] == pytest.approx(new["ratio"])
  assert len(summary["loadavg_before"]) == len(summary["loadavg_after"]) == 3
  assert summary["cpu_count"] >= 1 and summary["baseline"] == bench.BASELINE
  md = (workdir / "summary.md").read_text()
  assert "Interleaved rounds" in md and "random weights" in md


def test_fingerprint_sees_one_changed_token():
  row = {"group": 0, "member": 1, "status": "call_budget", "actions": 1,
         "transcript": [{"type": "reset"},
                        {"type": "call", "prompt_ids": [1, 2], "token_ids": [5, 6],
                         "logprobs": [-1.0, -2.0]},
                        {"type": "call", "error": "backend_exception"}]}
  other = json.loads(json.dumps(row))
  assert bench.fingerprint([row]) == bench.fingerprint([other])
  other["transcript"][1]["token_ids"][1] = 7
  other["transcript"][1]["logprobs"][1] = -2.5
  assert bench.fingerprint([row]) != bench.fingerprint([other])
  assert bench.max_logprob_diff([row], [other]) == pytest.approx(0.5)
