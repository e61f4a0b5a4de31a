"""The toy multi-turn task and tiny policy shared by the agentic RL tests (tests/lib/hostloop/
test_rollouts.py, tests/lib/serve/test_serve_policy.py): a two-step text env that rewards a reply
containing an "a" (so a random model's group of episodes differs), a one-word prompt agent, a
tiny Qwen3 on a tokenizer trained here, and an agentic GRPO trainer over it."""
import time

import jax
import jax.numpy as jnp
import optax

from lib.backends.protocol import SamplingParams
from lib.hostloop.prompt_agent import PromptAgent
from lib.models import model_setup, tokenizer as tokenizer_lib
from lib.rl import agentic, grpo
from lib.run.config_blocks import model_block
from lib.train.state import TrainState, nnx_apply_fn

TURN = 6     # tokens per reply


class VowelEnv:
  """Two steps; each rewards a reply that contains an "a". `hang_at` > 0 sleeps at that step
  (a hung env worker for the executors' timeouts)."""

  def __init__(self, hang_at: int = 0):
    self.hang_at = hang_at

  def reset(self, seed: int):
    self.t, self.seed = 0, seed
    return f"Task {seed}. Say a word with the letter a.", {}

  def step(self, action):
    self.t += 1
    if self.t == self.hang_at:
      time.sleep(600)
    reward = float("a" in str(action))
    return (f"Task {self.seed}, step {self.t}. Again.", reward, self.t >= 2, False,
            {"success": reward > 0 and self.t >= 2})


def make_agent():
  return PromptAgent("Reply with one word.", render=lambda o: o, parse=lambda t: t,
                     fallback_action="", params=SamplingParams(max_tokens=TURN, temperature=1.0))


def tiny_policy(directory: str):
  """(model, tokenizer, apply_fn, params): a random tiny Qwen3 on a 384-piece BPE."""
  tok = tokenizer_lib.train_tokenizer(model_setup.TINY_CORPUS, 384, directory)
  model, _, tok = model_setup.build_model(model_block(preset="qwen3-tiny", vocab_size=384),
                                          seed=0, tokenizer=tok)
  apply_fn, params = nnx_apply_fn(model)
  return model, tok, apply_fn, params


def make_trainer(tiny, **agentic_cfg) -> agentic.AgenticTrainer:
  """Adam 1e-2 on a copy of the tiny policy's params, groups of 4, TURN-token replies."""
  _, _, apply_fn, params = tiny
  tx = optax.adam(1e-2)
  state = TrainState.create(jax.tree.map(jnp.copy, params), tx)
  return agentic.AgenticTrainer(apply_fn, state, tx, grpo.GRPOConfig(group_size=4),
                                agentic.AgenticConfig(turn_tokens=TURN, **agentic_cfg))
