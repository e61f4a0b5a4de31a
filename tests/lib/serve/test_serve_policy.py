"""lib/serve/policy.py and weights.py: agentic GRPO iterations whose rollouts come from Accord's
server (in process, 127.0.0.1) over HTTP, token-in/token-out: the rows' ids are the ones the
update consumes and the server's log-probs are the update's own after each weight push (in
process and through POST /update_weights_from_disk); the token fields in vLLM's shape through the
official `openai` SDK; a server without the weight route fails the push in one line."""
import jax
import jax.numpy as jnp
import numpy as np
import openai
import pytest
from flax import nnx

from lib.hostloop import rollouts
from lib.hostloop.loop import HostLoop
from lib.rl import agentic, grpo
from lib.serve import policy

from agentic_toy import TURN, VowelEnv, make_agent, make_trainer, tiny_policy

pytestmark = pytest.mark.long_module(60)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
  return tiny_policy(str(tmp_path_factory.mktemp("tok")))


def served_iteration(trainer, sp, tok, tmp_path, it):
  """Push, collect one iteration's episodes from the server, check its rows against the batch
  and the update's log-probs against the server's, then train on them."""
  assert sp.sync(trainer.state.params, int(trainer.state.step))
  assert not sp.sync(trainer.state.params, int(trainer.state.step))   # once per step
  loop = HostLoop(sp.backend, action_budget=4, call_budget=4, seed=it, show_progress=False)
  jobs = rollouts.group_jobs([3 + it, 4 + it], 4, VowelEnv, make_agent)
  eps, dropped, rows = rollouts.collect(loop, jobs, str(tmp_path), f"it{it}.jsonl")
  assert len(eps) == 8 and sum(dropped.values()) == 0
  calls = [e for r in rows for e in r["transcript"] if e["type"] == "call"]
  assert len(calls) == 16
  for call in calls:
    assert len(call["token_ids"]) == len(call["logprobs"]) == call["output_tokens"] <= TURN
    assert call["prompt_ids"] and tok.decode(call["token_ids"]).startswith(call["text"])
  data = agentic.batch(eps, agentic.turn_advantages(eps, trainer.agentic), 0, TURN)
  p = data["input_ids"].shape[1] - TURN
  turns = [(r, eps[i].turns[j]) for r, (i, j) in enumerate(zip(data["episode"], data["turn"]))
           if i >= 0]
  # the update's rows are the recorded ids, in transcript order
  assert [(list(t.prompt_ids), list(t.response_ids)) for _, t in turns] == [
      (c["prompt_ids"], c["token_ids"]) for r in sorted(rows, key=lambda r: (r["group"],
                                                                             r["member"]))
      for c in r["transcript"] if c["type"] == "call"]
  for r, t in turns:
    assert data["input_ids"][r, p - len(t.prompt_ids):p].tolist() == list(t.prompt_ids)
    assert data["input_ids"][r, p:p + len(t.response_ids)].tolist() == list(t.response_ids)
  logp, _ = grpo.response_logprobs(trainer.apply_fn, trainer.state.params,
                                   jnp.asarray(data["input_ids"]),
                                   jnp.asarray(data["attention_mask"]), TURN)
  m = data["response_mask"].astype(bool)
  np.testing.assert_allclose(np.asarray(logp)[m], data["sample_logp"][m], atol=2e-4)
  return rollouts.train_iteration(trainer, loop, jobs, str(tmp_path), f"it{it}.jsonl", 0,
                                  jax.random.key(it))


@pytest.mark.parametrize("push", ["params", "disk"])
def test_served_iterations_train_on_the_servers_tokens_after_each_push(tiny, tmp_path, push):
  model, tok, _, params = tiny
  initial = jax.tree.map(np.array, params)
  trainer = make_trainer(tiny)
  cfg = policy.ServedConfig(push=push, push_dir=str(tmp_path / "push") if push == "disk" else "")
  with policy.served_policy(cfg, model, tok, turn_tokens=TURN) as sp:
    for it in range(2):   # iteration 1 samples with the params iteration 0 trained
      m = served_iteration(trainer, sp, tok, tmp_path, it)
      assert m["turns"] == 16 and m["train_tokens"] > 0
    assert sp.server.weights_version == 2
    moved = jax.tree.map(lambda a, b: float(np.abs(np.asarray(a) - np.asarray(b)).max()),
                         initial, trainer.state.params)
    assert max(jax.tree.leaves(moved)) > 0
    # the token fields in vLLM's shape, through the openai SDK
    client = openai.OpenAI(base_url=sp.server.url, api_key="unused", max_retries=0)
    r = client.chat.completions.create(model="accord", max_tokens=4, logprobs=True,
                                       messages=[{"role": "user", "content": "Say a."}],
                                       extra_body={"return_token_ids": True})
    body, choice = r.model_dump(), r.choices[0].model_dump()
    assert body["prompt_token_ids"] == choice["prompt_token_ids"] and choice["token_ids"]
    assert len(choice["logprobs"]["content"]) == len(choice["token_ids"])
  # the pushes went to the server's clone, never into the trainer's model
  unchanged = jax.tree.map(lambda a, b: np.array_equal(a, np.asarray(b)), initial,
                           nnx.state(model, nnx.Param))
  assert all(jax.tree.leaves(unchanged))


def test_a_push_to_a_server_without_the_weight_route_fails_in_one_line(tiny, tmp_path):
  model, tok, _, params = tiny
  with policy.served_policy(policy.ServedConfig(push="none"), model, tok,
                            turn_tokens=TURN) as sp:
    assert sp.push is None and not sp.sync(params, 0)
    with pytest.raises(RuntimeError, match="no POST /update_weights_from_disk .*vLLM"):
      policy.push_from_disk(sp.server.url, str(tmp_path))
    bad = jax.tree.map(lambda x: x[..., :1], params)
    with pytest.raises(ValueError, match="shape"):
      sp.server.load_params(bad)
  with pytest.raises(ValueError, match="push_dir"):
    policy.ServedConfig(url="http://127.0.0.1:1/v1")
