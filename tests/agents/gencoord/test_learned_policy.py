"""LearnedPolicy: chat prompts through any lib.backends backend into the shared closed loop."""
import pytest
from flax import nnx

from agents.gencoord import data, dialogue, episode as E, protocol, suites, surfaces
from agents.gencoord.dsl import parse
from agents.gencoord.learned import chat, policy as learned, tokenizer as dsl_tokenizer
from agents.gencoord.policies import registry as policies
from agents.gencoord.prompt import render
from lib import models
from lib.backends.scripted import FunctionPolicy, ScriptedBackend


class _Oracle:
  """A stand-in model: reads the rendered user message and answers as the program reference."""

  def __init__(self, episodes, surface):
    self.program, self.surface, self.seen = policies.make("program"), surface, []
    self.episodes = episodes
    self.contexts = {chat.user_message(E.sender_context(ep)): E.sender_context(ep)
                     for ep in episodes}
    # Free-form is a dialogue: every turn's prompt holds the earlier (gold) turns.
    self.turns = {chat.user_message(r.context): r.target for r in data.dialogue_rows(episodes)}

  def __call__(self, messages, rng):
    del rng
    user = messages[1]["content"]
    if self.surface == "freeform":
      self.seen.append(messages)
      return self.turns[user]
    ctx = self.contexts.get(user)
    if ctx is None:                # a receiver: rebuild its context from the delivered line
      incoming = next(ln for ln in user.splitlines() if ln.startswith("incoming: "))[10:]
      ctx = next(c for c in (E.receiver_context(ep, incoming) for ep in self.episodes)
                 if chat.user_message(c) == user)
    self.seen.append(messages)
    text = self.program.generate([ctx])[0]
    return text if self.surface == "dsl" else surfaces.ENCODERS[self.surface](parse(text))


def _run(surface):
  eps = suites.forward("heldout")[:16]
  oracle = _Oracle(eps, surface)
  b = learned.LearnedPolicy(ScriptedBackend(FunctionPolicy(oracle)), surface)
  return protocol.run_forward(eps, b), oracle, b


@pytest.mark.parametrize("surface", ["dsl", "json", "freeform"])
def test_closed_loop_through_chat_backend(surface):
  recs, oracle, b = _run(surface)
  rounds = [dialogue.rounds(r.ep) if surface == "freeform" else 1 for r in recs]
  assert all(r.success and r.raw_valid and r.model_calls == 2 * k for r, k in zip(recs, rounds))
  assert oracle.seen[0][0]["content"] == chat.system_prompt(surface)
  # One batched call per stage (per dialogue turn index: 16, 16, then the 4 two-round views).
  sizes = [16, 16] + ([rounds.count(2)] * 2 if surface == "freeform" else [])
  assert [c[2] for c in b.call_times] == sizes
  dsl_wire = [r.wire_bytes for r in _run("dsl")[0]]
  if surface != "dsl":
    assert all(w > d for w, d in zip([r.wire_bytes for r in recs], dsl_wire))


def test_failed_model_call_raises():
  def boom(messages, rng):
    raise RuntimeError("endpoint down")
  b = learned.LearnedPolicy(ScriptedBackend(FunctionPolicy(boom)))
  with pytest.raises(learned.ModelCallError, match="backend_exception"):
    protocol.run_forward(suites.forward("heldout")[:2], b)


def test_untrained_flax_model_is_scored_not_crashed(tmp_path):
  eps = suites.forward("heldout")[:2]
  tok = dsl_tokenizer.train_dsl_tokenizer([chat.system_prompt(), render(E.sender_context(eps[0]))], 300,
      tmp_path)
  config = models.preset("qwen3-tiny", vocab_size=len(tok), eos_token_ids=(
      tok.convert_tokens_to_ids("<|im_end|>"),), pad_token_id=tok.pad_token_id)
  model = models.build(config, rngs=nnx.Rngs(0))
  b = learned.LearnedPolicy(learned.flax_llm(model, tok), max_new_tokens=8)
  recs = protocol.run_forward(eps, b)
  assert all(not r.success and r.failure_code == "PARSE_FAILURE" for r in recs)
  for ep in eps:
    n_in, n_out = b.tokens[ep.episode_id]
    assert n_in > 50 and 1 <= n_out <= 8


def test_token_counts_under_a_counting_tokenizer(tmp_path):
  """Models with different vocabularies report tokens on one scale: the chat-rendered prompt and
  the output text (+ EOS) under the counting tokenizer."""
  eps = suites.forward("heldout")[:2]
  counter = dsl_tokenizer.train_dsl_tokenizer(
      [chat.system_prompt(), render(E.sender_context(eps[0]))], 280, tmp_path)
  seen = []

  def answer(messages, rng):
    seen.append(messages)
    return "agent_a:resource.obtain(item=oak_log,q=3)"
  own = learned.LearnedPolicy(ScriptedBackend(FunctionPolicy(answer)))
  counted = learned.LearnedPolicy(ScriptedBackend(FunctionPolicy(answer)),
                                  count_tokenizer=counter)
  protocol.run_forward(eps, own)
  calls = len(seen)
  protocol.run_forward(eps, counted)
  assert len(seen) == 2 * calls
  by_episode = {}
  for messages in seen[calls:]:
    prompt = counter.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    by_episode.setdefault(len(by_episode) % len(eps), []).append(prompt)
  out_tokens = len(counter.encode("agent_a:resource.obtain(item=oak_log,q=3)",
                                  add_special_tokens=False)) + 1
  total_in = sum(len(counter.encode(p, add_special_tokens=False))
                 for ps in by_episode.values() for p in ps)
  assert sum(n for n, _ in counted.tokens.values()) == total_in
  assert sum(m for _, m in counted.tokens.values()) == out_tokens * (calls)
  assert counted.tokens != own.tokens
