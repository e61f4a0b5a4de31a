"""lib/hostloop/rollouts.py: host-loop episodes as token-in/token-out samples of the current params,
env_error episodes dropped and counted, and one agentic GRPO iteration end to end (a tiny Qwen3
on a toy text env, inline and in worker processes)."""
import dataclasses
import os

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from lib.hostloop import rollouts
from lib.hostloop.executors import ProcessExecutor
from lib.hostloop.loop import HostLoop
from lib.rl import agentic, grpo, loop as rl_loop
from lib.train.state import TrainState

from agentic_toy import TURN, VowelEnv, make_agent, make_trainer, tiny_policy

pytestmark = pytest.mark.long_module(150)   # a worker-process iteration and two RL sessions


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
  return tiny_policy(str(tmp_path_factory.mktemp("tok")))


def make_loop(tiny, trainer, seed=0, executor=None):
  model, tok = tiny[0], tiny[1]
  backend = rollouts.PolicyBackend(model, tok, lambda: trainer.state.params, turn_tokens=TURN)
  kw = {} if executor is None else {"executor": lambda: executor}
  return HostLoop(backend, action_budget=4, call_budget=4, seed=seed, show_progress=False,
                  **kw), backend


def test_the_update_scores_exactly_the_sampled_tokens(tiny, tmp_path):
  trainer = make_trainer(tiny)
  loop, backend = make_loop(tiny, trainer)
  jobs = rollouts.group_jobs([3, 4], 4, VowelEnv, make_agent)
  eps, dropped, rows = rollouts.collect(loop, jobs, str(tmp_path), "it0.jsonl")
  assert len(eps) == 8 and sum(dropped.values()) == 0
  calls = [e for r in rows for e in r["transcript"] if e["type"] == "call"]
  assert len(calls) == sum(len(e.turns) for e in eps) == 16 and loop.steps == 2
  for call in calls:   # the prompt ids are the rendered conversation, the text their decoding
    assert call["prompt_ids"] == backend.encode(call["messages"])
    assert len(call["token_ids"]) == len(call["logprobs"]) == call["output_tokens"] <= TURN
    assert tiny[1].decode(call["token_ids"]).startswith(call["text"])
  data = agentic.batch(eps, agentic.turn_advantages(eps, trainer.agentic), 0, TURN)
  p = data["input_ids"].shape[1] - TURN
  for r, (i, j) in enumerate(zip(data["episode"], data["turn"])):
    if i < 0:
      continue
    t = eps[i].turns[j]
    n = len(t.response_ids)
    assert data["input_ids"][r, p - len(t.prompt_ids):p].tolist() == list(t.prompt_ids)
    assert data["input_ids"][r, p:p + n].tolist() == list(t.response_ids)
    assert data["response_mask"][r].sum() == n
  # The update's log-probs of those rows (same params as the sampler) are the sampling ones.
  logp, _ = grpo.response_logprobs(trainer.apply_fn, trainer.state.params,
                                   jnp.asarray(data["input_ids"]),
                                   jnp.asarray(data["attention_mask"]), TURN)
  m = data["response_mask"].astype(bool)
  np.testing.assert_allclose(np.asarray(logp)[m], data["sample_logp"][m], atol=2e-4)
  # A rerun into the same log reuses the finished rows (no model call).
  loop2, _ = make_loop(tiny, trainer)
  again, _, _ = rollouts.collect(loop2, jobs, str(tmp_path), "it0.jsonl")
  assert again == eps and loop2.steps == 0


def test_error_episodes_are_dropped_and_counted():
  base = {"member": 0, "success": False, "transcript": []}
  rows = [{**base, "group": 0, "member": m, "status": s}
          for m, s in enumerate(["failure", "env_error", "success", "backend_error"])]
  rows += [{**base, "group": 1, "status": "agent_error"}]
  kept, dropped = rollouts.episodes(rows)
  assert [(e.group, e.member, e.status) for e in kept] == [(0, 0, "failure"), (0, 2, "success")]
  assert dropped == {"env_error": 1, "backend_error": 1, "agent_error": 1}


def test_hung_env_worker_drops_its_episode_and_the_iteration_trains(tiny, tmp_path):
  """Processes executor: one episode's env hangs past the step timeout -> env_error, dropped
  from its group and counted; the iteration still updates the params."""
  trainer = make_trainer(tiny, omega=1.0)
  before = jax.tree.map(np.asarray, trainer.state.params)
  procs = ProcessExecutor(step_timeout_s=3, workers=4)
  kept = rollouts.KeptExecutor(lambda: procs)
  loop, _ = make_loop(tiny, trainer, executor=kept)
  jobs = rollouts.group_jobs([5], 4, VowelEnv, make_agent)
  jobs[2] = dataclasses.replace(jobs[2], make_env=lambda: VowelEnv(hang_at=1))
  m = rollouts.train_iteration(trainer, loop, jobs, str(tmp_path), "it0.jsonl", 0,
                               jax.random.key(0))
  assert (m["episodes"], m["dropped"], m["dropped_env_error"]) == (3, 1, 1)
  assert m["turns"] == 6 and m["train_tokens"] > 0
  changed = jax.tree.map(lambda a, b: not np.array_equal(a, np.asarray(b)), before,
                         trainer.state.params)
  assert any(jax.tree.leaves(changed))
  # The next iteration reuses the 3 kept workers and starts one for the killed one (a new
  # executor per iteration would start 4 more).
  assert (procs.started, procs.replaced) == (4, 1)
  jobs = rollouts.group_jobs([6], 4, VowelEnv, make_agent)
  m = rollouts.train_iteration(trainer, loop, jobs, str(tmp_path), "it1.jsonl", 0,
                               jax.random.key(1))
  assert m["dropped"] == 0 and (procs.started, procs.replaced) == (5, 1)
  kept.shutdown()


def test_rl_loop_runs_agentic_iterations_and_resumes(tiny, tmp_path):
  """Two iterations in the shared RL loop (GiGPO on, two minibatches with the sampler's
  log-probs as old_logp), a checkpoint, and a rerun that resumes without new iterations."""
  _, tok, apply_fn, params = tiny

  def run(iterations):
    tx = optax.adam(1e-2)
    state = TrainState.create(jax.tree.map(jnp.copy, params), tx)
    made = {}

    def make(state, initial):
      made["t"] = agentic.AgenticTrainer(apply_fn, state, tx, grpo.GRPOConfig(group_size=4),
                                         agentic.AgenticConfig(turn_tokens=TURN, omega=0.5,
                                                               minibatch_rows=8),
                                         ref_params=initial)
      return made["t"]

    def iterate(trainer, it):
      loop, _ = make_loop(tiny, trainer, seed=it)
      jobs = rollouts.group_jobs([10 + it, 20 + it], 4, VowelEnv, make_agent)
      return rollouts.train_iteration(trainer, loop, jobs, str(tmp_path / "rollouts"),
                                      f"it{it}.jsonl", tok.pad_token_id, jax.random.key(it))

    return rl_loop.train(state, make, iterate, iterations, str(tmp_path),
                         rl_loop.RLLoopConfig(prefix="agentic/", log_every=1),
                         record=lambda m: m["success"])

  first = run(2)
  assert len(first.records) == 2 and first.tokens_seen > 0
  assert {"loss", "ref_kl", "entropy", "clip_frac", "rollout_s", "update_s"} <= set(
      first.metrics[-1])
  moved = jax.tree.map(lambda a, b: float(np.abs(np.asarray(a) - np.asarray(b)).max()),
                       params, first.state.params)
  assert max(jax.tree.leaves(moved)) > 0
  assert os.path.isfile(tmp_path / "rollouts" / "it1.jsonl")
  again = run(2)
  assert again.resumed_from == 2 and again.records == first.records
