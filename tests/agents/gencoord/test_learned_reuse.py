"""agents/gencoord/learned/reuse.py: a model is copied only from a run that trained the same one."""
import json
import os

import pytest

from agents.gencoord.learned import reuse
from lib.run import run_env

_CONFIG = {"seeds": [0, 1], "recipes": ["direct_dsl", "json"], "number_tokens": "digits",
           "train_clusters_per_template": 60, "max_rows": 0, "mesh": {"data": 1, "fsdp": 1},
           "model": {"preset": "qwen3-tiny", "checkpoint": ""},
           "train": {"epochs": 20, "lr": 0.003, "drill": {"clusters_per_template": 960},
                     "select": {"split": "intervention", "stop_at": 1.0}}}


def _run_dir(root, name, config=None, data="rows", tokenizer="bpe", env=None, steps=(480, 960),
             validation=None):
  d = root / name
  for recipe in ("direct_dsl", "json"):
    (d / "data").mkdir(parents=True, exist_ok=True)
    (d / "data" / f"{recipe}.jsonl").write_text(f"{recipe} {data}\n")
    tok = d / "models" / recipe / "tokenizer"
    tok.mkdir(parents=True, exist_ok=True)
    (tok / "tokenizer.json").write_text(f"{recipe} {tokenizer}")
  mdir = d / "models" / "direct_dsl" / "s0"
  for step in steps:
    (mdir / "ckpt" / str(step)).mkdir(parents=True)
    (mdir / "ckpt" / str(step) / "state").write_text(f"weights at {step}")
  if steps:
    (mdir / "ckpt" / "1440.orbax-checkpoint-tmp-7").mkdir()     # a save in progress
  if validation is not None:
    (mdir / "validation.jsonl").write_text(
        "".join(json.dumps({"step": 480 * (i + 1), "stop": s}) + "\n"
                for i, s in enumerate(validation)))
  (d / "config.json").write_text(json.dumps(config or _CONFIG))
  if env is not False:
    rec = run_env.current()
    rec["env"].update(env or {})
    (d / run_env.FILENAME).write_text(json.dumps(rec))
  return d


def _changed(**train):
  cfg = json.loads(json.dumps(_CONFIG))
  cfg["train"].update(train)
  return cfg


def test_the_same_model_is_reusable_and_every_difference_is_named(tmp_path):
  ours = _run_dir(tmp_path, "ours", steps=())
  same = _run_dir(tmp_path, "same", validation=[False, False])
  assert reuse.check(_CONFIG, str(ours), str(same), "direct_dsl", 0) == ([], [])
  cases = {
      "train fields differ: lr": _run_dir(tmp_path, "lr", config=_changed(lr=0.001)),
      "data/direct_dsl.jsonl differs": _run_dir(tmp_path, "data", data="other rows"),
      "tokenizer differs": _run_dir(tmp_path, "tok", tokenizer="other merges"),
      "numerics XLA_FLAGS": _run_dir(tmp_path, "fast",
                                     env={"XLA_FLAGS": "--xla_cpu_enable_fast_math=true"}),
      "train.select differs": _run_dir(tmp_path, "nosel", config=_changed(select=None)),
      "train fields differ: schedule": _run_dir(tmp_path, "wsd", config=_changed(schedule="wsd")),
  }
  for expected, other in cases.items():
    reasons, _ = reuse.check(_CONFIG, str(ours), str(other), "direct_dsl", 0)
    assert len(reasons) == 1 and reasons[0].startswith(expected), (expected, reasons)
  reasons, _ = reuse.check(_CONFIG, str(ours), str(same), "direct_dsl", 1)
  assert reasons == ["no checkpoint of direct_dsl/s1"]
  reasons, _ = reuse.check(_CONFIG, str(ours), str(tmp_path / "nowhere"), "direct_dsl", 0)
  assert reasons[0].startswith("no readable config.json")
  # A run made before the schedule field existed trained with the cosine schedule.
  explicit = _changed(schedule="cosine", decay_frac=0.2)
  assert reuse.check(explicit, str(ours), str(same), "direct_dsl", 0)[0] == []
  # A run that never recorded its numerics is reused with a warning.
  old = _run_dir(tmp_path, "old", env=False)
  reasons, warnings = reuse.check(_CONFIG, str(ours), str(old), "direct_dsl", 0)
  assert reasons == [] and "numerics settings are not recorded" in warnings[0]


def test_a_run_without_the_stop_reuses_a_model_whose_stop_never_fired(tmp_path):
  ours_cfg = _changed(select=None)
  ours = _run_dir(tmp_path, "ours", config=ours_cfg, steps=())
  never = _run_dir(tmp_path, "never", validation=[False, False, False])
  fired = _run_dir(tmp_path, "fired", validation=[False, True])
  unknown = _run_dir(tmp_path, "unknown")                  # no validation history
  assert reuse.check(ours_cfg, str(ours), str(never), "direct_dsl", 0)[0] == []
  for other in (fired, unknown):
    reasons, _ = reuse.check(ours_cfg, str(ours), str(other), "direct_dsl", 0)
    assert reasons and "stop fired or left no history" in reasons[0]
  # The other way round (this run stops on validation, the other never validated): refused,
  # since its earlier checkpoints were never checked against the stop.
  sel = _run_dir(tmp_path, "sel", steps=())
  nosel = _run_dir(tmp_path, "nosel", config=ours_cfg)
  assert reuse.check(_CONFIG, str(sel), str(nosel), "direct_dsl", 0)[0]


def test_a_single_recipe_run_keeps_its_tokenizer_at_the_top(tmp_path):
  cfg = dict(_CONFIG, recipes=["direct_dsl"])
  ours = _run_dir(tmp_path, "ours", config=cfg, steps=())
  legacy = _run_dir(tmp_path, "legacy", config=cfg)
  os.rename(legacy / "models/direct_dsl/tokenizer", legacy / "tokenizer")
  assert reuse.check(cfg, str(ours), str(legacy), "direct_dsl", 0)[0] == []
  (legacy / "tokenizer/tokenizer.json").write_text("different")
  assert reuse.check(cfg, str(ours), str(legacy), "direct_dsl", 0)[0] == ["tokenizer differs"]


def test_adopt_copies_the_first_match_and_never_overwrites(tmp_path):
  ours = _run_dir(tmp_path, "ours", steps=())
  bad = _run_dir(tmp_path, "bad", data="other rows")
  good = _run_dir(tmp_path, "good", validation=[False, False])
  lines = []
  got = reuse.adopt(_CONFIG, str(ours), [str(ours), str(bad), str(good)], "direct_dsl", 0,
                    log=lines.append)
  assert got == str(good)
  assert "not from" in lines[0] and "data/direct_dsl.jsonl differs" in lines[0]
  ckpt = ours / "models/direct_dsl/s0/ckpt"
  assert sorted(os.listdir(ckpt)) == ["480", "960"]           # the save in progress stays behind
  assert (ckpt / "960/state").read_text() == "weights at 960"
  assert (ours / "models/direct_dsl/s0/validation.jsonl").exists()
  # This run's own checkpoint is never replaced.
  (good / "models/direct_dsl/s0/ckpt/960/state").write_text("changed")
  assert reuse.adopt(_CONFIG, str(ours), [str(good)], "direct_dsl", 0, log=lines.append) is None
  assert (ckpt / "960/state").read_text() == "weights at 960"
  # No match: train here.
  fresh = _run_dir(tmp_path, "fresh", steps=())
  assert reuse.adopt(_CONFIG, str(fresh), [str(bad)], "direct_dsl", 0, log=lines.append) is None


def test_run_env_records_and_compares_numerics(tmp_path, monkeypatch):
  monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_enable_fast_math=true")
  rec = run_env.write(str(tmp_path))
  assert run_env.load(str(tmp_path)) == rec
  assert rec["env"]["XLA_FLAGS"] == "--xla_cpu_enable_fast_math=true" and rec["versions"]["jax"]
  monkeypatch.delenv("XLA_FLAGS")
  diff = run_env.differences(rec, run_env.current())
  assert diff == ["XLA_FLAGS: '--xla_cpu_enable_fast_math=true' != ''"]
  (tmp_path / run_env.FILENAME).write_text("{not json")
  assert run_env.load(str(tmp_path)) is None
  assert run_env.load(str(tmp_path / "missing")) is None


@pytest.mark.parametrize("field", ["model", "mesh", "number_tokens", "max_rows"])
def test_config_fields_outside_train_must_match(tmp_path, field):
  ours = _run_dir(tmp_path, "ours", steps=())
  cfg = json.loads(json.dumps(_CONFIG))
  cfg[field] = "something else"
  other = _run_dir(tmp_path, "other", config=cfg)
  assert reuse.check(_CONFIG, str(ours), str(other), "direct_dsl", 0)[0] == [
      f"config field {field} differs"]


def test_a_tokenizer_spelled_differently_is_the_same_when_it_encodes_the_same(tmp_path):
  from agents.gencoord.learned import chat, training_recipes
  from agents.gencoord.learned import tokenizer as dsl_tokenizer
  rows = training_recipes.get("direct_dsl").rows()[:40]
  tok = dsl_tokenizer.train_dsl_tokenizer([chat.system_prompt() + r.prompt + r.target
                                           for r in rows], 400, tmp_path / "a")
  del tok
  data = tmp_path / "rows.jsonl"
  data.write_text("".join(json.dumps({"prompt": r.prompt, "target": r.target}) + "\n"
                          for r in rows))
  spec = json.loads((tmp_path / "a/tokenizer.json").read_text())
  pattern = json.dumps(spec["pre_tokenizer"])
  assert "oak_planks|" in pattern
  # The item alternatives in another order (what the hash seed did): the same tokenizer.
  items = "crafting_table|wooden_pickaxe"
  assert items in pattern
  reordered = json.loads(pattern.replace(items, "wooden_pickaxe|crafting_table"))
  (tmp_path / "b").mkdir()
  (tmp_path / "b/tokenizer.json").write_text(json.dumps({**spec, "pre_tokenizer": reordered}))
  assert reuse._same_tokenizer(str(tmp_path / "a/tokenizer.json"),
                               str(tmp_path / "b/tokenizer.json"), [str(data)])
  # A pattern that cuts differently is not.
  (tmp_path / "c").mkdir()
  cut = json.loads(pattern)
  cut["pretokenizers"][0]["pattern"]["Regex"] = r"\d|[(),:=]|\s+"
  (tmp_path / "c/tokenizer.json").write_text(json.dumps({**spec, "pre_tokenizer": cut}))
  assert not reuse._same_tokenizer(str(tmp_path / "a/tokenizer.json"),
                                   str(tmp_path / "c/tokenizer.json"), [str(data)])
  # Different merges never are.
  merges = dict(spec["model"], merges=spec["model"]["merges"][:-5])
  (tmp_path / "d").mkdir()
  (tmp_path / "d/tokenizer.json").write_text(json.dumps({**spec, "model": merges}))
  assert not reuse._same_tokenizer(str(tmp_path / "a/tokenizer.json"),
                                   str(tmp_path / "d/tokenizer.json"), [str(data)])


def test_a_keep_best_model_is_reused_only_by_a_run_that_keeps_the_best_too(tmp_path):
  best_cfg = _changed(select={"split": "intervention", "stop_at": 1.0, "keep": "best"})
  other = _run_dir(tmp_path, "best", config=best_cfg, validation=[False, False])
  (other / "models/direct_dsl/s0/best/480").mkdir(parents=True)
  # A run without the stop keeps the final step: not the model that run kept.
  nosel_cfg = _changed(select=None)
  nosel = _run_dir(tmp_path, "nosel", config=nosel_cfg, steps=())
  reasons, _ = reuse.check(nosel_cfg, str(nosel), str(other), "direct_dsl", 0)
  assert reasons and "keep=best" in reasons[0]
  # A run that keeps the best takes it, with its best/ params; one that keeps the last does not.
  ours = _run_dir(tmp_path, "ours", config=best_cfg, steps=())
  assert reuse.check(best_cfg, str(ours), str(other), "direct_dsl", 0)[0] == []
  assert reuse.adopt(best_cfg, str(ours), [str(other)], "direct_dsl", 0) == str(other)
  assert (ours / "models/direct_dsl/s0/best/480").is_dir()
  last = _run_dir(tmp_path, "last", steps=())
  assert "train.select differs" in reuse.check(_CONFIG, str(last), str(other), "direct_dsl", 0)[0]
  # A config written before `keep` existed keeps the last: the same as keep="last".
  keep_last = _changed(select={"split": "intervention", "stop_at": 1.0, "keep": "last"})
  assert reuse.check(keep_last, str(last), str(_run_dir(tmp_path, "old")), "direct_dsl", 0)[0] == []
