"""Learned commitment backends over any `lib.llm` chat backend.

`LearnedBackend` is `backends.PromptBackend` with the chat renderer (`chat.messages`) and a
`lib.llm.Backend` as generator: (a) `FlaxBackend` -- our jit KV-cache sampler on the model just
trained or on any local Hugging Face-format Qwen checkpoint, or (b) `OpenAIBackend` -- any
OpenAI-compatible endpoint (vLLM serving an exported checkpoint). Decoding is greedy with the
structured output capped at 256 tokens. It keeps per-episode token counts and per-call times so
experiments can report input/output tokens and time-to-commitment.
"""
import time

from agents.gencoord import backends
from agents.gencoord.learned import chat
from lib.llm.backend import SamplingParams

MAX_NEW_TOKENS = 256


class ModelCallError(RuntimeError):
  """The model endpoint failed a call (e.g. HTTP error); raised so no episode is mis-scored."""


class LearnedBackend(backends.PromptBackend):
  """One learned model answering local contexts on one surface (dsl/json/freeform/factor)."""

  def __init__(self, llm, surface: str = "dsl", name: str = "learned",
               max_new_tokens: int = MAX_NEW_TOKENS):
    self.llm = llm
    self.params = SamplingParams(max_tokens=max_new_tokens, temperature=0.0)
    self.tokens: dict = {}          # episode_id -> [input tokens, output tokens]
    self.call_times: list = []      # (start, end, batch size) of each batched model call
    self._pending: list = []
    super().__init__(self._generate_texts, name=name, surface=surface, learned_calls=1,
                     render=lambda ctx: chat.messages(ctx, surface))

  def generate_raw(self, contexts):
    self._pending = [c.episode_id for c in contexts]   # token counts go to these episodes
    return super().generate_raw(contexts)

  def _generate_texts(self, conversations):
    start = time.perf_counter()
    out = self.llm.generate(conversations, self.params)
    self.call_times.append((start, time.perf_counter(), len(conversations)))
    for episode_id, c in zip(self._pending, out):
      if c.error is not None:
        raise ModelCallError(f"{self.name}: model call failed ({c.error}: {c.error_detail})")
      acc = self.tokens.setdefault(episode_id, [0, 0])
      acc[0] += c.input_tokens or 0
      acc[1] += c.output_tokens or 0
    return [c.text for c in out]


def flax_llm(model, tokenizer, max_batch: int = 256):
  """Our sampler on an in-memory model (the one just trained)."""
  from lib.llm.flax_backend import FlaxBackend
  return FlaxBackend(model, tokenizer, max_batch=max_batch)


def llm_from_config(c, workdir: str | None = None):
  """A `lib.llm` backend from a config block (kind = flax with checkpoint, openai_http, vllm)."""
  from lib.llm import factory
  return factory.make_backend(c, workdir=workdir)
