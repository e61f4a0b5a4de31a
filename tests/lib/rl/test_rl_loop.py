"""lib/rl/loop.py: the one RL loop resumes into the run an uninterrupted one makes, keeps the
caller's records in the checkpoints and evaluates at its period and at the end."""
import shutil

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from lib.models import model_setup
from lib.rl import grpo, loop as rl_loop
from lib.run import config_blocks
from lib.train import optim
from lib.train.checkpoint import Checkpointer
from lib.train.state import TrainState, nnx_apply_fn

SMALL = {"num_layers": 1, "hidden_size": 32, "intermediate_size": 64, "num_heads": 2,
         "num_kv_heads": 1, "head_dim": 16, "vocab_size": 32}
TARGET = 5


CFG = grpo.GRPOConfig(group_size=4, minibatch_prompts=4)
TX = optim.adamw(lr=1e-2, total_steps=4, schedule="constant", weight_decay=0.0)


def _sample(params, prompt_ids, prompt_mask, key):
  """Two random tokens per row, a function of the key alone: the loop's resume is under test, not
  the sampler, whose compile would take most of the test's time."""
  rows = prompt_ids.shape[0]
  return jax.random.randint(key, (rows, 2), 0, 32, jnp.int32), jnp.full((rows,), 2, jnp.int32)


@pytest.fixture(scope="module")
def tiny():
  """apply_fn, initial params, sampler and update step of a one-layer Qwen3, shared by the runs so
  each compiles once."""
  model, _, _ = model_setup.build_model(config_blocks.model_block(overrides=SMALL), seed=0)
  apply_fn, params = nnx_apply_fn(model)
  step_fn = jax.jit(grpo.make_grpo_step(apply_fn, TX, CFG), donate_argnums=0)
  return apply_fn, params, _sample, step_fn


def _grpo_run(tiny, workdir, iterations=4, ckpt_every=2):
  """GRPO on the first-token task; prompts and keys of iteration `it` depend only on `it`."""
  apply_fn, params, sample_fn, step_fn = tiny
  tx, cfg, key = TX, CFG, jax.random.key(0)
  initial = {}

  def make_trainer(state, initial_params):
    initial["params"] = jax.tree.map(np.asarray, initial_params)
    return grpo.GRPOTrainer(apply_fn, sample_fn, state, tx, cfg, ref_params=initial_params,
                            step_fn=step_fn)

  def iterate(trainer, it):
    ids = np.random.default_rng([0, it]).integers(6, 32, (4, 3)).astype(np.int32)
    reward = lambda tokens, lengths: (tokens[:, 0] == TARGET).astype(np.float32).reshape(4, 4)
    return trainer.iteration(ids, np.ones_like(ids), reward, jax.random.fold_in(key, it))

  # Committed to the device as a restored state is, so the resumed run reuses the step's compile.
  fresh = jax.device_put(TrainState.create(jax.tree.map(jnp.copy, params), tx), jax.devices()[0])
  run = rl_loop.train(fresh, make_trainer, iterate, iterations, str(workdir),
                      rl_loop.RLLoopConfig(ckpt_every=ckpt_every, prefix="grpo/"),
                      record=lambda m: {"reward": m["reward_mean"], "loss": m["loss"]})
  return run, fresh, initial["params"]


def test_resumed_grpo_run_equals_an_uninterrupted_one(tiny, tmp_path):
  straight, _, _ = _grpo_run(tiny, tmp_path / "a")
  assert straight.resumed_from == 0 and len(straight.records) == len(straight.metrics) == 4
  assert straight.tokens_seen == sum(m["train_tokens"] for m in straight.metrics) > 0
  # Interrupt after iteration 2: drop the final checkpoint, rerun into the same directory.
  shutil.copytree(tmp_path / "a", tmp_path / "b")
  shutil.rmtree(tmp_path / "b" / "ckpt" / "4")
  resumed, fresh, initial = _grpo_run(tiny, tmp_path / "b")
  assert resumed.resumed_from == 2 and len(resumed.metrics) == 2
  assert resumed.records == straight.records and resumed.tokens_seen == straight.tokens_seen
  assert resumed.prior_s[0] > 0 and resumed.wall_s > resumed.prior_s[0]   # both sessions' time
  for a, b in zip(jax.tree.leaves(straight.state), jax.tree.leaves(resumed.state)):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
  # The KL reference is the initial model, not the resumed one; the fresh state was freed.
  for a, b, c in zip(jax.tree.leaves(straight.trainer.ref_params),
                     jax.tree.leaves(resumed.trainer.ref_params), jax.tree.leaves(initial)):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    np.testing.assert_array_equal(np.asarray(b), c)
  assert all(x.is_deleted() for x in jax.tree.leaves(fresh.params))
  assert not np.allclose(np.asarray(jax.tree.leaves(resumed.state.params)[0]),
                         jax.tree.leaves(initial)[0])          # training moved the weights
  # The checkpoint metadata carries every iteration's record and the tokens seen.
  ckpt = Checkpointer(str(tmp_path / "b" / "ckpt"))
  _, meta = ckpt.restore(template=resumed.state)
  ckpt.close()
  assert meta["step"] == 4 and meta["records"] == straight.records
  assert meta["tokens_seen"] == straight.tokens_seen and meta["wall_s"] > 0
  assert (tmp_path / "b" / "tb").is_dir()


class _Counter:
  """A model-free trainer: its one parameter counts the iterations (fast loop-only tests)."""

  def __init__(self, state):
    self.state = state

  def iteration(self):
    self.state = self.state.replace(step=self.state.step + 1,
                                    params={"n": self.state.params["n"] + 1.0})
    return {"train_tokens": 3, "loss": float(self.state.params["n"][0])}


def _counted(workdir, iterations, eval_every, seen, ckpt_every=100):
  state = TrainState.create({"n": jnp.zeros((1,))}, optax.sgd(0.1))

  def evaluate(trainer):
    seen.append(int(trainer.state.step))
    return {"eval_n": trainer.state.params["n"][0]}

  settings = rl_loop.RLLoopConfig(eval_every=eval_every, ckpt_every=ckpt_every, log_every=1)
  return rl_loop.train(state, lambda s, p: _Counter(s), lambda t, it: t.iteration(), iterations,
                       str(workdir), settings, record=lambda m: m["loss"], evaluate=evaluate)


def test_evaluation_runs_first_every_eval_every_and_at_the_end(tmp_path):
  seen = []
  run = _counted(tmp_path, iterations=5, eval_every=2, seen=seen)
  assert seen == [0, 2, 4, 5]                  # before the first iteration, 2, 4 and the last
  assert [("eval_n" in m) for m in run.metrics] == [False, True, False, True, True]
  assert run.first_eval == {"eval_n": 0.0} and run.last_eval == {"eval_n": 5.0}
  assert run.records == [1.0, 2.0, 3.0, 4.0, 5.0] and run.tokens_seen == 15
  assert [m["tokens_seen"] for m in run.metrics] == [3, 6, 9, 12, 15]
  # A finished run resumes at its end: nothing is trained or evaluated again, the account stays.
  again = _counted(tmp_path, iterations=5, eval_every=2, seen=seen)
  assert seen == [0, 2, 4, 5] and again.resumed_from == 5 and again.metrics == []
  assert (again.records, again.tokens_seen) == (run.records, run.tokens_seen)
  assert (again.first_eval, again.last_eval) == (run.first_eval, run.last_eval)


def test_a_resumed_run_keeps_its_first_evaluation_and_a_trainerless_run_its_state(tmp_path):
  seen = []
  _counted(tmp_path / "a", iterations=2, eval_every=0, seen=seen, ckpt_every=2)
  assert seen == [0, 2]                        # eval_every=0: before the first and at the last
  longer = _counted(tmp_path / "a", iterations=4, eval_every=0, seen=seen, ckpt_every=2)
  assert seen == [0, 2, 4] and longer.resumed_from == 2       # the first evaluation is kept
  assert longer.first_eval == {"eval_n": 0.0} and longer.records == [1.0, 2.0, 3.0, 4.0]
  # No iterations and no trainer (an untrained baseline): the state is the fresh one.
  state = TrainState.create({"n": jnp.ones((1,))}, optax.sgd(0.1))
  base = rl_loop.train(state, lambda s, p: None, lambda t, it: {}, 0, str(tmp_path / "base"))
  assert base.trainer is None and base.records == [] and base.tokens_seen == 0
  assert float(base.state.params["n"][0]) == 1.0
