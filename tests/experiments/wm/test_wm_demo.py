"""The CPU demo's warm start gives GRPO-GT a usable reward (the failure this guards against: a
tiny model that never closes <next_state>, so every GT/MIS reward is 0 and only COIN trains).

Runs the demo's data and SFT stages on a shrunken debug config (one JVM, ~2-3 min on 2 cores).
"""
import json
import os

import pytest

pytest.importorskip("scienceworld")

from flax import nnx  # noqa: E402

from agents.wm import data, embedders, warmstart  # noqa: E402
from configs.wm import demo as wm_demo_config  # noqa: E402
from experiments.wm import data as wm_data  # noqa: E402
from experiments.wm import demo as wm_demo  # noqa: E402
from lib import models, tokenizer as tokenizer_lib  # noqa: E402


@pytest.fixture(scope="module")
def warm(tmp_path_factory):
  c = wm_demo_config.get_config("debug=True")
  c.data.scienceworld.tasks = ["find-plant"]
  c.data.scienceworld.train_variations, c.data.scienceworld.eval_variations = [0, 1], [2]
  c.data.textworld.train_seeds, c.data.textworld.eval_seeds = [1, 2], [101]
  c.data.noisy_reps = 1
  work = str(tmp_path_factory.mktemp("wm_demo"))
  wm_data.run(c.data, os.path.join(work, "data"))
  base = wm_demo._sft(c, work, os.path.join(work, "data"))   # pylint: disable=protected-access
  return c, work, base


def test_warm_start_gives_a_non_degenerate_gt_reward(warm):
  c, work, _ = warm
  summary = json.load(open(os.path.join(work, "sft_summary.json")))
  check = summary["check"]
  assert check["prompts"] == c.check.prompts and check["group_size"] == 4
  # Many replies close <next_state> (the untrained model below closes none). Measured 0.41 on
  # jax 0.10.2 / flax 0.12.8 and above 0.5 on the stack of the previous release: the bound guards
  # the failure (a warm start that never closes the tag), not one stack's sampling noise.
  assert check["well_formed"] >= 0.25, check
  assert 0.0 < check["reward_mean"] < 1.0, check     # neither all-zero nor saturated
  assert check["nonzero_adv_group_frac"] > 0.0, check  # some group carries a gradient
  assert summary["loss_last"] < 0.5 * summary["loss_first"]
  # TextWorld steps recorded their admissible lists: list-regime agent rows exist
  assert 0 < summary["agent_steps_listed"] < summary["agent_steps"]


def test_short_targets_fit_the_output_budget_and_random_init_is_degenerate(warm):
  c, work, base = warm
  t = c.train_template.train
  model, _ = models.load_pretrained(base, dtype="float32")
  tok = tokenizer_lib.load_tokenizer(base)
  short = data.load_samples(os.path.join(work, "train_short.jsonl"))
  assert short and all(warmstart.fits(tok, s, t.max_output_tokens) for s in short)
  # The same check on an untrained model of the same shape and tokenizer (the old demo's
  # situation): nothing is well formed and the GT reward is identically zero, which the test
  # above rejects.
  fresh = models.build(model.config, rngs=nnx.Rngs(1))
  cold = warmstart.rollout_check(
      fresh, tok, short, prompts=4, group_size=4, max_output_tokens=t.max_output_tokens,
      embedder=embedders.make_embedder(c.train_template.embedder),
      threshold=c.train_template.reward.threshold, seed=0)
  assert cold["well_formed"] == 0.0 and cold["reward_mean"] == 0.0
  assert cold["nonzero_adv_group_frac"] == 0.0
