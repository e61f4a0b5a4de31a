"""conpact/train end to end on SCRIPTED source-split logs: ConPAct-R with separate planner and
actor, the baseline token-matched to it (counted independently here), loadable exports."""
import json
import os

import pytest

from agents.conpact.learned import recipe_train
from configs.conpact import scripted as conpact_scripted
from configs.conpact import train as conpact_train
from experiments.conpact import eval as conpact_eval
from experiments.conpact import train as train_exp
from lib.backends.flax_backend import FlaxBackend
from lib.models import tokenizer as tokenizer_lib

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


def _count(tok, rows):
  return [min(len(tok(r["target"], add_special_tokens=False)["input_ids"]) + 1, MAX_LEN)
          for r in rows]


def test_recipe_trains_two_roles_and_the_baseline_matches_its_tokens(source, tmp_path):
  """ConPAct-R end to end (the baseline shares its training path; its selection is checked
  through `plan`, which stops before training)."""
  src, demos = source
  r_dir = str(tmp_path / "r")
  r = train_exp.run(_config(f"source={src},recipe=conpact_r,rows={demos}"), r_dir)
  b_config = _config(f"recipe=baseline,rows={demos},match={r_dir}")
  base = recipe_train.plan(b_config, str(tmp_path / "b"))
  b_config.train.max_steps = 1  # a step cap does not cut a matched budget
  capped = recipe_train.plan(b_config, str(tmp_path / "b1"))
  with open(demos) as f:
    demo_rows = [json.loads(line) for line in f]
  for role in ("planner", "actor"):
    tok = tokenizer_lib.load_tokenizer(os.path.join(r_dir, role, "export"))
    assert tok.get_vocab() == base[role]["tokenizer"].get_vocab()
    with open(os.path.join(r_dir, role, "rows.jsonl")) as f:
      rt = _count(tok, [json.loads(line) for line in f])
    bt = _count(tok, base[role]["rows"])
    assert sum(rt) == r["roles"][role]["target_tokens"] > 0 and r["roles"][role]["steps"] >= 1
    assert sum(bt) == base[role]["stats"]["target_tokens"]
    assert capped[role]["stats"]["target_tokens"] == sum(bt)
    # the baseline ends within one example of the recipe's target tokens, never above
    assert 0 <= sum(rt) - sum(bt) < max(bt)
    assert {ex["role"] for ex in base[role]["rows"]} == {role}
    # the recipe itself is matched to one epoch (reference_epochs=1) of its role's demonstrations
    budget = sum(_count(tok, [x for x in demo_rows if x["meta"]["role"] == role]))
    assert r["roles"][role]["budget"] == budget and 0 <= budget - sum(rt) < max(rt)
    assert set(r["roles"][role]["by_source"]) <= {"consistent", "reconciliation", "replay"}
    assert base[role]["stats"]["by_source"] == {"demonstration": len(bt)}
  assert r["roles"]["actor"]["excluded"]["inconsistent_segment"] > 0
  with open(os.path.join(r_dir, "data_stats.json")) as f:
    stats = json.loads(f.read(), parse_constant=lambda c: pytest.fail(f"{c} in data_stats"))
  assert stats["recipe"] == "conpact_r" and stats["curate"]["reconciliation_replay"] is True
  backend = FlaxBackend.from_pretrained(r["roles"]["actor"]["export"])
  assert backend.model.config.vocab_size == len(backend.tokenizer)


def test_bad_inputs_fail_in_one_line(source, tmp_path):
  src, demos = source
  with pytest.raises(FileNotFoundError, match="no data_stats.json"):
    recipe_train.plan(_config(f"recipe=baseline,rows={demos},match={src}"), str(tmp_path / "x"))
  with pytest.raises(ValueError, match="needs baseline.rows"):
    recipe_train.plan(_config("recipe=baseline"), str(tmp_path / "y"))
  with pytest.raises(FileNotFoundError, match="source results"):
    recipe_train.plan(_config(f"source={tmp_path},recipe=conpact_s"), str(tmp_path / "z"))
  c = _config(f"source={src}")
  c.recipe = "conpact_q"  # past the config's own check (e.g. set by another experiment)
  with pytest.raises(ValueError, match="recipe 'conpact_q'; valid"):
    recipe_train.plan(c, str(tmp_path / "w"))
  with pytest.raises(FileNotFoundError, match="not a local Hugging Face directory"):
    recipe_train.plan(_config(f"source={src},planner={tmp_path}"), str(tmp_path / "v"))


def test_config_interface():
  c = conpact_train.get_config("debug=True,recipe=conpact_s,source=runs/x,sup=False,env=sokoban")
  assert (c.recipe, c.envs) == ("conpact_s", ["sokoban"])
  assert dict(c.roles) == {"planner": "", "actor": ""}
  assert (c.curate.consistency_filtering, c.curate.reconciliation_supervision,
          c.curate.reconciliation_replay) == (True, False, True)
  assert dict(c.baseline) == {"rows": "", "match": ""} and c.reference_epochs == 3
  with pytest.raises(ValueError, match="conpact_s, conpact_r, baseline"):
    conpact_train.get_config("recipe=conpact")


def test_training_batches_hold_every_example_once(tmp_path):
  """Length-grouped batches: every example's target exactly once (a truncated long prompt keeps
  its target), widths a power of two in [64, max_len]."""
  tok = tokenizer_lib.train_tokenizer(["abc def ghi jkl " * 20], 300, tmp_path / "tok")
  examples = [{"messages": [{"role": "user", "content": "abc " * (12 * i)}], "target": f"def {i}"}
              for i in range(7)]
  batch_at, steps = recipe_train.training_batches(examples, tok, batch=3, max_len=128, seed=0)
  assert steps == 3
  seen, widths = [], set()
  for s in range(steps):
    b = batch_at(s)
    widths.add(b["input_ids"].shape[1])
    assert b["input_ids"].shape[0] == 3
    for row, mask in zip(b["input_ids"], b["loss_mask"]):
      if mask.any():
        seen.append(tok.decode(row[mask == 1].tolist()))
  assert sorted(seen) == sorted(ex["target"] + tokenizer_lib.IM_END for ex in examples)
  assert widths == {64, 128}
