"""Learned commitment policies over any `lib.backends` chat backend.

`LearnedPolicy` renders each local context as chat messages (`chat.messages`) and asks a
`lib.backends.protocol.Backend` for the answers: (a) `FlaxBackend` -- our jit KV-cache sampler on
the model just trained or on any local Hugging Face-format Qwen checkpoint, or (b) `OpenAIBackend`
-- any OpenAI-compatible endpoint (vLLM serving an exported checkpoint). Outputs map from its
surface to Short DSL as for any `PromptPolicy` (`prompted.decode_outputs`). Decoding is greedy
with the structured output capped at 256 tokens; `constrained=True` decodes commitments under
the Short DSL regex (`constrained.DSL_REGEX`: the flax sampler masks every draw on device, an
OpenAI-compatible server gets it as structured_outputs.regex), so every commitment parses
(dialogue turns stay free). It keeps per-episode token counts and prompt hashes (the episode ids
come with the contexts) and per-call times so experiments can report input/output tokens, which
model inputs an episode used (`split_audit.prompt_sha256`) and time-to-commitment.
"""
import hashlib
import json
import time
from typing import Sequence

from agents.gencoord.episode import LocalContext
from agents.gencoord.learned import chat, constrained as constrained_lib
from agents.gencoord.policies import prompted
from lib.backends.flax_backend import FlaxBackend
from lib.backends.protocol import Backend, SamplingParams

MAX_NEW_TOKENS = 256


class ModelCallError(RuntimeError):
  """The model endpoint failed a call (e.g. HTTP error); raised so no episode is mis-scored."""


class LearnedPolicy:
  """One learned model answering local contexts on one surface (dsl/json/freeform/factor); a
  `CommitmentPolicy` and a `RawTextPolicy`.

  Args:
    llm: the chat model (`lib.backends.protocol.Backend`).
    surface: what the model writes.
    name: the policy's name in result rows.
    max_new_tokens: output cap per call.
    constrained: decode commitments under the surface's regex (`constrained.surface_regex`;
      ValueError for a surface without one).
    count_tokenizer: None: token counts are the model's own; a tokenizer: the counts are those
      of the chat-rendered prompt and of the output text (+1 for the EOS that ended it) under
      it, so models with different vocabularies compare on one scale.
  """
  learned_calls = 1

  def __init__(self, llm: Backend, surface: str = "dsl", name: str = "learned",
               max_new_tokens: int = MAX_NEW_TOKENS, constrained: bool = False,
               count_tokenizer=None):
    prompted.check_surface(surface)
    self.count_tokenizer = count_tokenizer
    self.llm, self.surface, self.name = llm, surface, name
    self.params = SamplingParams(max_tokens=max_new_tokens, temperature=0.0)
    self.commit_params = (self.params.replace(regex=constrained_lib.surface_regex(surface))
                          if constrained else self.params)
    self.tokens: dict = {}          # episode_id -> [input tokens, output tokens]
    self.prompt_hashes: dict = {}   # episode_id -> sha256 of each model input, in call order
    self.call_times: list = []      # (start, end, batch size) of each batched model call

  def generate_raw(self, contexts: Sequence[LocalContext], params: SamplingParams | None = None
                   ) -> list[str]:
    """The model's outputs on this surface, unconverted (free-form dialogue turns).

    Args:
      contexts: the local contexts.
      params: decoding settings (default `self.params`: greedy, unconstrained).
    """
    if not contexts:
      return []
    outputs = self.complete([chat.messages(c, self.surface) for c in contexts],
                            [c.episode_id for c in contexts], params)
    if len(outputs) != len(contexts):
      raise ValueError(f"generator returned {len(outputs)} outputs for {len(contexts)} prompts")
    return outputs

  def generate(self, contexts: Sequence[LocalContext]) -> list[str]:
    """Short DSL, one text per context (`prompted.to_short_dsl` of each output)."""
    raw = self.generate_raw(contexts, self.commit_params)
    return prompted.decode_outputs(contexts, raw, self.surface)[0]

  def complete(self, conversations: list, episode_ids: Sequence[str],
               params: SamplingParams | None = None) -> list[str]:
    """One batched model call; its token counts are added to `tokens[episode_id]`.

    Args:
      conversations: chat message lists, one per episode.
      episode_ids: the episode each conversation belongs to, in the same order.
      params: decoding settings (default `self.params`).
    Returns:
      The completion texts, in order.
    """
    start = time.perf_counter()
    out = self.llm.generate(conversations, params or self.params)
    self.call_times.append((start, time.perf_counter(), len(conversations)))
    for episode_id, conversation in zip(episode_ids, conversations):
      # The hash `split_audit.prompt_sha256` gives the same messages (training rows record it).
      digest = hashlib.sha256(json.dumps(conversation, sort_keys=True).encode("utf-8"))
      self.prompt_hashes.setdefault(episode_id, []).append(digest.hexdigest())
    for episode_id, conversation, c in zip(episode_ids, conversations, out):
      if c.error is not None:
        raise ModelCallError(f"{self.name}: model call failed ({c.error}: {c.error_detail})")
      n_in, n_out = ((c.input_tokens, c.output_tokens) if self.count_tokenizer is None
                     else _counted(self.count_tokenizer, conversation, c))
      acc = self.tokens.setdefault(episode_id, [0, 0])
      acc[0] += n_in or 0
      acc[1] += n_out or 0
    return [c.text for c in out]


def _counted(tokenizer, conversation, completion) -> tuple[int, int]:
  """(prompt, output) tokens of one call under `tokenizer`: the prompt as the chat template
  renders it with the generation prompt, the output text plus the EOS of a "stop" finish (no
  stop strings are set here, so "stop" is an EOS)."""
  prompt = tokenizer.apply_chat_template(list(conversation), tokenize=False,
                                         add_generation_prompt=True)
  n_out = len(tokenizer.encode(completion.text, add_special_tokens=False))
  return (len(tokenizer.encode(prompt, add_special_tokens=False)),
          n_out + (completion.finish_reason == "stop"))


def flax_llm(model, tokenizer, max_batch: int = 256) -> FlaxBackend:
  """Our sampler on an in-memory model (the one just trained).

  Args:
    model: a Flax NNX causal LM.
    tokenizer: its tokenizer.
    max_batch: the sampler's largest batch.
  Returns:
    A `lib.backends` backend for `LearnedPolicy`.
  """
  return FlaxBackend(model, tokenizer, max_batch=max_batch)
