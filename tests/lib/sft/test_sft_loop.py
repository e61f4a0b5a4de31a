"""lib/sft/loop.py: the one SFT loop lowers the loss, and a resumed run equals an uninterrupted
one."""
import shutil

import jax
import numpy as np
import pytest

from lib.models import model_setup
from lib.run import config_blocks
from lib.sft import step as sft, batches as sft_batches, loop as sft_loop
from lib.train import optim
from lib.train.state import TrainState, nnx_apply_fn

SMALL = {"num_layers": 1, "hidden_size": 32, "intermediate_size": 64, "num_heads": 2,
         "num_kv_heads": 1, "head_dim": 16, "vocab_size": 64}


def _examples(n=32, seed=0):
  """Prompt of random tokens, then a target repeating its first token twice + EOS (id 3)."""
  rng = np.random.default_rng(seed)
  out = []
  for _ in range(n):
    prompt = [1] + rng.integers(10, 64, rng.integers(3, 8)).tolist() + [2]
    out.append((prompt, [prompt[1], prompt[1], 3]))
  return out


@pytest.fixture(scope="module")
def arrays():
  return sft_batches.left_padded(_examples(), pad_id=0, multiple=8)


def _run(workdir, arrays, steps=8, ckpt_every=4, start_fresh=False, validate=None,
         validate_every=0, log_every=1, validate_from=0):
  model, _, _ = model_setup.build_model(config_blocks.model_block(overrides=SMALL), seed=0)
  apply_fn, params = nnx_apply_fn(model)
  tx = optim.adamw(lr=1e-2, total_steps=steps, warmup_frac=0.0)
  evaluate = jax.jit(sft.make_sft_eval(apply_fn))
  held_out = {k: arrays[k] for k in sft_batches.KEYS}
  settings = sft_loop.SFTConfig(target_window=arrays["target_window"], log_every=log_every,
                                ckpt_every=ckpt_every, start_fresh=start_fresh,
                                validate_every=validate_every, validate_from=validate_from)
  return sft_loop.train(apply_fn, TrainState.create(params, tx), tx,
                        sft_batches.epoch_batches(arrays, 8, seed=0), steps, str(workdir),
                        settings, evaluate=lambda p: float(evaluate(p, held_out)),
                        validate=validate)


def test_loss_falls_and_tokens_are_counted(arrays, tmp_path):
  run = _run(tmp_path, arrays, steps=12, ckpt_every=12)
  assert run.resumed_from == 0 and len(run.losses) == len(run.history) == 12
  assert [s for s, _ in run.history] == list(range(1, 13))
  assert run.last_eval_loss < 0.8 * run.first_eval_loss, (run.first_eval_loss, run.last_eval_loss)
  assert run.train_tokens == int(arrays["attention_mask"].sum()) * 3     # 4 steps an epoch
  assert int(run.state.step) == 12 and (tmp_path / "tb").is_dir()


def test_logged_loss_is_the_mean_since_the_previous_log(arrays, tmp_path):
  """With interleaved sources a log step's own loss would always be one source's batch."""
  run = _run(tmp_path, arrays, steps=8, ckpt_every=8, log_every=4)
  assert [s for s, _ in run.history] == [4, 8] and len(run.losses) == 8
  for (_, logged), window in zip(run.history, (run.losses[:4], run.losses[4:])):
    assert logged == pytest.approx(sum(window) / 4) and logged != pytest.approx(window[-1])


def test_resume_gives_identical_params(arrays, tmp_path):
  straight = _run(tmp_path / "a", arrays)
  # Interrupt after step 4: drop the final checkpoint, rerun into the same directory.
  shutil.copytree(tmp_path / "a", tmp_path / "b")
  shutil.rmtree(tmp_path / "b" / "ckpt" / "8")
  resumed = _run(tmp_path / "b", arrays)
  assert resumed.resumed_from == 4 and len(resumed.losses) == 4
  assert resumed.history == straight.history and resumed.train_tokens == straight.train_tokens
  assert resumed.first_eval_loss == straight.first_eval_loss
  for a, b in zip(jax.tree.leaves(straight.state), jax.tree.leaves(resumed.state)):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
  # A finished run resumes at its last step and does nothing more.
  again = _run(tmp_path / "a", arrays)
  assert again.resumed_from == 8 and again.losses == [] and again.history == straight.history


def test_start_fresh_sets_old_checkpoints_aside(arrays, tmp_path):
  first = _run(tmp_path, arrays, steps=4, ckpt_every=4)
  fresh = _run(tmp_path, arrays, steps=4, ckpt_every=4, start_fresh=True)
  assert fresh.resumed_from == 0 and len(fresh.losses) == 4
  assert fresh.history == first.history               # same seed, same stream, from step 0
  assert [p.name for p in tmp_path.iterdir() if p.name.startswith("ckpt.discarded-")]


def test_validation_stops_early_and_a_resumed_run_stays_stopped(arrays, tmp_path):
  seen = []

  def validate(step, params):
    seen.append(step)
    return {"score": step / 10}, step >= 4         # the rule fires at the second validation

  run = _run(tmp_path, arrays, steps=12, ckpt_every=100, validate=validate, validate_every=2)
  assert seen == [2, 4] and run.steps == 4 and int(run.state.step) == 4
  assert [s for s, _ in run.history] == [1, 2, 3, 4]
  assert sorted(p.name for p in (tmp_path / "ckpt").iterdir() if p.name.isdigit()) == ["4"]
  # Resumed, the run neither trains on nor validates again: step 4 is its final model.
  again = _run(tmp_path, arrays, steps=12, ckpt_every=100, validate=validate, validate_every=2)
  assert again.steps == 4 and again.losses == [] and seen == [2, 4]
  for a, b in zip(jax.tree.leaves(run.state.params), jax.tree.leaves(again.state.params)):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_validation_without_a_stop_runs_the_whole_budget(arrays, tmp_path):
  seen = []
  run = _run(tmp_path, arrays, steps=6, validate=lambda s, p: (seen.append(s) or {}, False),
             validate_every=4)
  assert run.steps == 6 and seen == [4, 6]          # every 4 steps and at the last one


def test_validation_counts_its_period_from_validate_from(arrays, tmp_path):
  seen = []
  run = _run(tmp_path, arrays, steps=11, validate=lambda s, p: (seen.append(s) or {}, False),
             validate_every=4, validate_from=3)
  assert run.steps == 11 and seen == [7, 11]        # 3 + 4, 3 + 8 (the last step too)


def test_validation_period_must_be_a_multiple_of_the_log_period(arrays, tmp_path):
  model, _, _ = model_setup.build_model(config_blocks.model_block(overrides=SMALL), seed=0)
  apply_fn, params = nnx_apply_fn(model)
  tx = optim.adamw(lr=1e-2, total_steps=4, warmup_frac=0.0)
  with pytest.raises(ValueError, match="multiple of log_every"):
    sft_loop.train(apply_fn, TrainState.create(params, tx), tx,
                   sft_batches.epoch_batches(arrays, 8, seed=0), 4, str(tmp_path),
                   sft_loop.SFTConfig(log_every=2, validate_every=3),
                   validate=lambda s, p: ({}, False))
