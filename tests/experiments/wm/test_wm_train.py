"""Audit training conditions: what differs between them, their rewards, and wm_train end to end
(GRPO and OPSD on a tiny model, resume from checkpoint equals an uninterrupted run)."""
import json
import os
import time

import jax
import numpy as np
import pytest
from safetensors.numpy import load_file

from agents.wm import condition_table, conditions, data, embedders, policy
from configs.wm import train as wm_train_config
from experiments.wm import train as wm_train
from lib.models import tokenizer as tokenizer_lib
from lib.run.jsonl import write_jsonl
from lib.rl import losses as rl_losses

pytestmark = pytest.mark.long_module(50)   # scheduled first: tests/conftest.py

OBS = ["You are in the kitchen. A fridge is here.", "The fridge is open. It holds an egg.",
       "You pick up the egg.", "Nothing happens.", "You are in the garden. A shovel lies here.",
       "The door to the hallway is now open.", "The stove is on and getting hot.",
       "You put the egg in the pot."]


def _samples(n=8):
  return [data.WMSample("textworld", f"t{i}", "cook an egg", [], OBS[i % len(OBS)],
                        f"act {i}", OBS[(i + 1) % len(OBS)]) for i in range(n)]


@pytest.fixture(scope="module")
def tok(tmp_path_factory):
  texts = [m["content"] for s in _samples() for m in data.teacher_messages(s)]
  texts += ["<think> </think> <next_state> </next_state>"] * 4
  return tokenizer_lib.train_tokenizer(texts, 400, str(tmp_path_factory.mktemp("tok")))


def _encode_rows(tok, texts, group):
  rows = [tok.encode(t, add_special_tokens=False) for t in texts for _ in range(group)]
  width = max(map(len, rows))
  tokens = np.zeros((len(rows), width), np.int32)
  for i, r in enumerate(rows):
    tokens[i, :len(r)] = r
  return tokens, np.asarray([len(r) for r in rows], np.int32)


def test_configs_differ_only_in_condition_and_permutation():
  base = wm_train_config.get_config("condition=GRPO-GT").to_dict()
  for name, cond in condition_table.CONDITIONS.items():
    c = wm_train_config.get_config(f"condition={name}").to_dict()
    assert c.pop("condition") == name and c["grpo"].pop("permute_scores") == cond.permute
    # the memory plan sizes the condition's own update (BASE is planned as GRPO): its trainer,
    # batch rows and reference follow the condition, so it is compared on that, not field by field
    plan = c.pop("plan")
    assert plan["trainer"] == (cond.trainer or "grpo")
    assert plan["reference"] == (cond.trainer == "grpo")
    other = json.loads(json.dumps(base))
    other.pop("condition"), other["grpo"].pop("permute_scores"), other.pop("plan")
    assert c == other
  # Table 6 defaults
  c = wm_train_config.get_config("condition=OPSD-GT,env=alfworld")
  assert (c.optim.lr, c.optim.weight_decay, c.train.batch, c.grpo.group_size) == (1e-6, .01, 32, 8)
  assert (c.grpo.kl_coef, c.grpo.entropy_coef, c.grpo.clip_eps, c.grpo.dual_clip_c) == (
      0.01, 0.001, 0.2, 3.0)
  assert (c.opsd.alpha, c.opsd.is_clip, c.train.max_input_tokens,
          c.train.max_output_tokens) == (0.5, 2.0, 1536, 512)
  with pytest.raises(ValueError, match="unknown condition"):
    wm_train_config.get_config("condition=GRPO-XX")
  # the pairs the audit compares differ in exactly the field it intends
  gt, mis = conditions.get("GRPO-GT"), conditions.get("GRPO-MIS")
  assert [f for f in ("trainer", "target", "reward", "permute")
          if getattr(gt, f) != getattr(mis, f)] == ["target"]
  perm = conditions.get("GT-PERM")
  assert (perm.trainer, perm.target, perm.reward, perm.permute) == ("grpo", "gt", "embedding", True)


def test_gt_reward_beats_mis_for_a_model_that_copies_the_target(tok):
  samples = _samples()
  truth = [s.next_obs for s in samples]
  copies = [f"<think>it changes</think><next_state>{t}</next_state>" for t in truth]
  tokens, lengths = _encode_rows(tok, copies, group=2)
  decode = lambda row, n: policy.decode(tok, row, n)
  embed = embedders.lexical_embedder()
  scores = {}
  for name in ("GRPO-GT", "GRPO-MIS"):
    cond = conditions.get(name)
    targets = conditions.training_targets(truth, cond, mis_seed=3)
    fn = conditions.make_reward_fn(cond, targets, decode, embed, 2, jax.random.key(0))
    scores[name] = fn(tokens, lengths)
    assert scores[name].shape == (len(samples), 2)
  assert np.all(scores["GRPO-GT"] == 1.0)
  assert scores["GRPO-MIS"].mean() < 0.5 < scores["GRPO-GT"].mean()
  mis = conditions.training_targets(truth, conditions.get("GRPO-MIS"), mis_seed=3)
  assert sorted(mis) == sorted(truth) and all(m != t for m, t in zip(mis, truth))
  # a response without a <next_state> block earns nothing
  tokens, lengths = _encode_rows(tok, [t for t in truth], group=2)
  fn = conditions.make_reward_fn(conditions.get("GRPO-GT"), truth, decode, embed, 2,
                                 jax.random.key(0))
  assert fn(tokens, lengths).sum() == 0


def test_coin_ignores_predictions_and_perm_keeps_group_multisets(tok):
  truth = [s.next_obs for s in _samples()]
  coin = conditions.get("GRPO-COIN")
  a = _encode_rows(tok, [f"<next_state>{t}</next_state>" for t in truth], 4)
  b = _encode_rows(tok, ["garbage"] * len(truth), 4)
  fn = conditions.make_reward_fn(coin, truth, None, None, 4, jax.random.key(7))
  assert np.array_equal(fn(*a), fn(*b))
  other = conditions.make_reward_fn(coin, truth, None, None, 4, jax.random.key(8))
  assert not np.array_equal(fn(*a), other(*a))
  big = conditions.make_reward_fn(coin, ["x"] * 500, None, None, 8, jax.random.key(1))
  assert abs(big(None, None).mean() - 0.5) < 0.03       # 4000 draws: 6 sigma
  gt = conditions.make_reward_fn(conditions.get("GRPO-GT"), truth,
                                 lambda r, n: policy.decode(tok, r, n),
                                 embedders.lexical_embedder(), 4, jax.random.key(0))
  mixed = [f"<next_state>{t}</next_state>" if i % 2 else "x" for i, t in enumerate(truth)]
  scores = gt(*_encode_rows(tok, mixed, 4))
  scores[:, 1] = 1 - scores[:, 1]                      # groups with distinct scores
  perm = np.asarray(rl_losses.permute_within_group(scores, jax.random.key(2)))
  assert np.array_equal(np.sort(perm, 1), np.sort(scores, 1))
  assert not np.array_equal(perm, scores)


def test_next_state_span_selects_the_prediction(tok):
  text = "<think>it opens</think><next_state>The fridge is open.</next_state>"
  tokens, lengths = _encode_rows(tok, [text, "<think>no tag</think>"], 1)
  span = policy.next_state_span(tok, tokens, lengths)
  picked = tok.decode(tokens[0][span[0].astype(bool)].tolist())
  assert picked == "<next_state>The fridge is open.</next_state>"
  assert span[1].sum() == 0


def _config(train_path, condition, steps):
  c = wm_train_config.get_config(f"debug=True,condition={condition}")
  c.data.train = train_path
  c.model.vocab_size = 300
  c.train.steps, c.train.batch, c.train.max_output_tokens = steps, 2, 6
  c.grpo.group_size, c.grpo.minibatch_prompts, c.opsd.minibatch = 2, 2, 2
  return c


def _params(workdir):
  return load_file(os.path.join(workdir, "hf", "model.safetensors"))


def test_grpo_resume_matches_uninterrupted_run(tmp_path):
  path = str(tmp_path / "train.jsonl")
  write_jsonl(path, [s.to_json() for s in _samples()])
  full = wm_train.run(_config(path, "GT-PERM", 2), str(tmp_path / "full"))
  wm_train.run(_config(path, "GT-PERM", 1), str(tmp_path / "split"))
  t0 = time.perf_counter()
  resumed = wm_train.run(_config(path, "GT-PERM", 2), str(tmp_path / "split"))
  # the resumed run's cost includes the first session's (kept in the checkpoint metadata)
  assert resumed["wall_s"] > time.perf_counter() - t0
  assert (full["steps"], resumed["resumed_from"], full["samples"]) == (2, 1, 8)
  assert full["permute_scores"] and full["embedder"] == "lexical"
  # what the trainer saw survives the resume (kept in the checkpoint metadata)
  for k in ("signal_mean", "well_formed_mean", "reward_std_mean", "nonzero_adv_group_frac_mean"):
    assert resumed[k] == pytest.approx(full[k]), k
  # an untrained model never closes <next_state> in 6 tokens: nothing well formed, reward 0
  assert full["well_formed_mean"] == 0.0 and full["signal_mean"] == 0.0
  assert full["nonzero_adv_group_frac_mean"] == 0.0
  a, b = _params(tmp_path / "full"), _params(tmp_path / "split")
  init = wm_train.run(_config(path, "BASE", 2), str(tmp_path / "base"))
  assert init["steps"] == 0
  base = _params(tmp_path / "base")
  for k in a:
    np.testing.assert_allclose(a[k], b[k], rtol=1e-5, atol=1e-6)
  assert any(not np.allclose(a[k], base[k]) for k in a)     # training moved the weights
  with pytest.raises(ValueError, match="contradicts"):
    bad = _config(path, "GRPO-GT", 1)
    bad.grpo.permute_scores = True
    wm_train.run(bad, str(tmp_path / "bad"))


def test_opsd_mis_trains_on_the_next_state_span(tmp_path):
  path = str(tmp_path / "train.jsonl")
  write_jsonl(path, [s.to_json() for s in _samples()])
  c = _config(path, "OPSD-MIS", 1)
  c.train.span = "response"      # an untrained model rarely opens <next_state> in 6 tokens
  out = wm_train.run(c, str(tmp_path / "opsd"))
  assert out["trainer"] == "opsd" and out["target"] == "mis" and out["steps"] == 1
  assert out["signal_first"] > 0                            # student-teacher JSD
  assert out["well_formed_mean"] == 0.0 and out["target_span_tokens_mean"] > 0
  assert os.path.exists(tmp_path / "opsd" / "hf" / "tokenizer.json")


def test_configs_resolve_and_sweep_every_condition():
  from configs import common
  from configs.wm import demo as wm_demo_config
  from configs.wm import study as wm_study_config
  from experiments import registry
  from lib.rl import grpo, opsd
  for module in (wm_train_config, wm_demo_config, wm_study_config):
    for arg in ("debug=True", None):
      assert module.get_config(arg).experiment in registry.names()
    with pytest.raises(common.ConfigArgError):
      module.get_config("no_such_arg=1")
  points = []
  wm_train_config.sweep(lambda **kw: points.append(kw))
  assert sorted(p["condition"] for p in points) == sorted(condition_table.CONDITIONS)
  c = wm_train_config.get_config(None)
  assert grpo.GRPOConfig.from_config(c.grpo).group_size == 8
  assert opsd.OPSDConfig.from_config(c.opsd).alpha == 0.5
  demo = wm_demo_config.get_config(None)
  assert set(demo.conditions) <= set(condition_table.CONDITIONS)
  assert demo.train_template.embedder.kind == "lexical" and "CPU" in demo.scale_label
  study = wm_study_config.get_config(None)
  assert sorted(study.conditions) == sorted(condition_table.CONDITIONS) and len(study.seeds) == 3
  assert len(study.data.textworld.eval_seeds) >= 64
