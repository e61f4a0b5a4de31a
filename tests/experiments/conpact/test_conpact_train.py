"""conpact/train end to end on SCRIPTED source-split logs: ConPAct-R with separate planner and
actor, the baseline token-matched to it (counted independently here), loadable exports."""
import json
import os

import pytest

from configs.conpact import scripted as conpact_scripted
from configs.conpact import train as conpact_train
from experiments.conpact import eval as conpact_eval
from experiments.conpact import train as train_exp
from lib import tokenizer as tokenizer_lib
from lib.llm.flax_backend import FlaxBackend

MAX_LEN = 128


@pytest.fixture(scope="module")
def source(tmp_path_factory):
  """Scripted ConPAct-I and assertion (Plan-Act) logs on two Sokoban SOURCE levels; the
  assertion rollouts' replies are the plain demonstrations of the baseline."""
  d = str(tmp_path_factory.mktemp("cp_source"))
  c = conpact_scripted.get_config("debug=True,envs=sokoban")
  c.split, c.n_resamples = "source", 50
  c.conditions = [x for x in c.conditions if x["name"] in ("conpact_i", "assertion")]
  conpact_eval.run(c, d)
  demos = os.path.join(d, "demos.jsonl")
  with open(os.path.join(d, "results.jsonl")) as f, open(demos, "w") as out:
    for row in map(json.loads, f):
      for e in row["transcript"]:
        if row["condition"] == "assertion" and e["type"] == "call":
          out.write(json.dumps({"messages": e["messages"], "target": e["text"],
                                "meta": {"role": e["tag"]}}) + "\n")
  return d, demos


def _config(arg):
  c = conpact_train.get_config("debug=True," + arg)
  c.curate.success_only = False
  c.train.max_len, c.train.batch, c.train.max_steps = MAX_LEN, 16, 0
  c.reference_epochs = 1
  c.model.overrides = dict(num_layers=1, num_heads=2, num_kv_heads=1)  # compiles faster
  return c


def _tokens(workdir, role):
  """Target tokens of the rows a run trained on, counted here with its exported tokenizer."""
  tok = tokenizer_lib.load_tokenizer(os.path.join(workdir, role, "export"))
  with open(os.path.join(workdir, role, "rows.jsonl")) as f:
    rows = [json.loads(line) for line in f]
  return [min(len(tok(r["target"], add_special_tokens=False)["input_ids"]) + 1, MAX_LEN)
          for r in rows]


def test_recipe_and_token_matched_baseline(source, tmp_path):
  src, demos = source
  r_dir, b_dir = str(tmp_path / "r"), str(tmp_path / "b")
  r = train_exp.run(_config(f"source={src},recipe=conpact_r,rows={demos}"), r_dir)
  b = train_exp.run(_config(f"recipe=baseline,rows={demos},match={r_dir}"), b_dir)
  for role in ("planner", "actor"):
    rt, bt = _tokens(r_dir, role), _tokens(b_dir, role)
    assert sum(rt) == r["roles"][role]["target_tokens"] and sum(bt) == b["roles"][role]["target_tokens"]
    assert r["roles"][role]["rows"] > 0 and r["roles"][role]["steps"] >= 1
    # the baseline ends within one example of the recipe's target tokens, never above
    assert 0 <= sum(rt) - sum(bt) < max(bt)
    # the recipe itself is matched to one epoch of the demonstrations of its role
    with open(demos) as f:
      ref = [json.loads(l) for l in f if json.loads(l)["meta"]["role"] == role]
    tok = tokenizer_lib.load_tokenizer(os.path.join(r_dir, role, "export"))
    budget = sum(min(len(tok(x["target"], add_special_tokens=False)["input_ids"]) + 1, MAX_LEN)
                 for x in ref)
    assert r["roles"][role]["budget"] == budget and 0 <= budget - sum(rt) < max(rt)
    assert set(r["roles"][role]["by_source"]) <= {"consistent", "reconciliation", "replay"}
    assert b["roles"][role]["by_source"] == {"demonstration": len(bt)}
  assert r["roles"]["actor"]["excluded"]["inconsistent_segment"] > 0
  with open(os.path.join(r_dir, "data_stats.json")) as f:
    stats = json.loads(f.read(), parse_constant=lambda c: pytest.fail(f"{c} in data_stats"))
  assert stats["recipe"] == "conpact_r" and stats["curate"]["reconciliation_replay"] is True
  backend = FlaxBackend.from_pretrained(r["roles"]["actor"]["export"])
  assert backend.model.config.vocab_size == len(backend.tokenizer)


def test_bad_inputs_fail_in_one_line(source, tmp_path):
  src, demos = source
  with pytest.raises(FileNotFoundError, match="no data_stats.json"):
    train_exp.run(_config(f"recipe=baseline,rows={demos},match={src}"), str(tmp_path / "x"))
  with pytest.raises(ValueError, match="needs baseline.rows"):
    train_exp.run(_config("recipe=baseline"), str(tmp_path / "y"))
  with pytest.raises(FileNotFoundError, match="source results"):
    train_exp.run(_config(f"source={tmp_path},recipe=conpact_s"), str(tmp_path / "z"))
  with pytest.raises(ValueError, match="recipe .conpact_q.; valid"):
    train_exp.run(_config(f"source={src},recipe=conpact_q"), str(tmp_path / "w"))
