"""Flax backend: our jit KV-cache sampler (`lib.generate.sampling`) over a local Qwen model.

Requests are grouped by sampling settings (seed aside) and each group is decoded in one sampler
call. The batch is padded to a power of two with copies of its first prompt, so a host loop whose
live-episode count shrinks step by step compiles a handful of programs, not one per batch size.
Per-request seeds are folded into the group's PRNG key: a rerun of the same batch is reproducible;
unlike the scripted backend, samples at temperature > 0 do depend on the batch's company.

`FlaxBackend.from_block(config.model)` builds the model of a `model` block through the one builder
(`lib.models.model_setup.build_model`): a Hugging Face-format checkpoint directory (weights +
tokenizer, no network), or the embedded default -- a byte-level BPE trained here on a small built-in
corpus and a random `qwen3-tiny` model -- for tests and demos. `from_pretrained(dir)` and
`tiny(dir)` are the two cases spelled out.
"""
import hashlib
import json
import time

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from lib import models
from lib.backends.protocol import Backend, Completion, SamplingParams
from lib.generate import sampling, token_dfa
from lib.models import chunked, model_setup
from lib.run import config_blocks
from lib.train import state as train_state

class FlaxBackend(Backend):
  """Chat generation and embeddings with a Flax NNX Qwen model and a HF fast tokenizer."""

  name = "flax"

  def __init__(self, model, tokenizer, *, seed: int = 0, max_batch: int = 64,
               min_batch: int = 1, template_kwargs: dict | None = None, embed_max_tokens: int = 512,
               model_name: str = "accord-flax"):
    super().__init__()
    self.model, self.tokenizer = model, tokenizer
    if not 1 <= min_batch <= max_batch:
      raise ValueError(f"need 1 <= min_batch <= max_batch, got {min_batch}, {max_batch}")
    # Batches are padded to a power of two >= min_batch: a larger min_batch means fewer compiled
    # programs (one per prompt bucket when min_batch = max_batch) at the cost of padded rows.
    self.seed, self.max_batch, self.min_batch = seed, max_batch, min_batch
    self.template_kwargs = dict(template_kwargs or {})
    self.embed_max_tokens = embed_max_tokens
    self.model_name = model_name
    self._calls = 0
    graphdef, _ = nnx.split(model)
    self._embed_jit = jax.jit(
        lambda st, ids, mask: models.embed(nnx.merge(graphdef, st), ids, mask))
    self._score_jit = jax.jit(
        lambda st, ids, mask, top: score_tokens(nnx.merge(graphdef, st), ids, mask, top),
        static_argnums=3)

  @classmethod
  def from_block(cls, block, tokenizer_dir=None, seed: int = 0, **kw) -> "FlaxBackend":
    """The model of a `model` block (lib/models/model_setup.py) at the block's dtype.

    Args:
      block: a `model` block: a local checkpoint (with its own tokenizer.json), or without one
        the embedded default -- `block.preset` with random weights from `seed` and a BPE of
        `block.vocab_size` trained on `model_setup.TINY_CORPUS`.
      tokenizer_dir: where that BPE is saved (required without a checkpoint).
      seed: initialisation seed, and the backend's sampling seed.
      **kw: constructor arguments (max_batch, min_batch, template_kwargs, ...).
    Returns:
      The FlaxBackend.
    """
    block = config_blocks.model_block(**dict(block))
    if not block["checkpoint"] and tokenizer_dir is None:
      raise ValueError("the embedded tiny flax model needs a directory for its tokenizer")
    model, _, tok = model_setup.build_model(
        block, seed=seed, tokenizer_texts=model_setup.TINY_CORPUS, tokenizer_dir=tokenizer_dir,
        dtype=block["dtype"])
    if tok is None:
      raise FileNotFoundError(f"model.checkpoint {block['checkpoint']!r} has no tokenizer.json")
    return cls(model, tok, seed=seed, **kw)

  @classmethod
  def from_pretrained(cls, path, dtype: str = "float32", **kw) -> "FlaxBackend":
    """A local Hugging Face-format directory (weights + tokenizer), see `from_block`.

    Args:
      path: the checkpoint directory.
      dtype: the weights' dtype name.
      **kw: `from_block` / constructor arguments.
    """
    return cls.from_block(config_blocks.model_block(checkpoint=str(path), dtype=dtype), **kw)

  @classmethod
  def tiny(cls, path, seed: int = 0, vocab_size: int = 384, preset: str = "qwen3-tiny",
           **kw) -> "FlaxBackend":
    """The embedded default (tokenizer trained into `path`), see `from_block`.

    Args:
      path: where the trained BPE tokenizer is saved.
      seed: initialisation and sampling seed.
      vocab_size: the BPE's vocabulary size.
      preset: the model preset (random weights).
      **kw: constructor arguments.
    """
    return cls.from_block(config_blocks.model_block(preset=preset, vocab_size=vocab_size),
                          tokenizer_dir=path, seed=seed, **kw)

  # ---- generation -------------------------------------------------------------------------

  def _key(self, seeds: list[int | None]) -> jax.Array:
    self._calls += 1
    # Unseeded requests take a fresh stream per call; seeded ones are a function of their seeds.
    salt = [s if s is not None else f"call{self._calls}" for s in seeds]
    digest = hashlib.blake2b(json.dumps(salt).encode(), digest_size=4).digest()
    return jax.random.fold_in(jax.random.PRNGKey(self.seed), int.from_bytes(digest, "little"))

  def _generate(self, conversations, params):
    out: list[Completion | None] = [None] * len(conversations)
    groups: dict[SamplingParams, list[int]] = {}
    for i, p in enumerate(params):
      groups.setdefault(p.without_seed(), []).append(i)
    for p, idx in groups.items():
      for lo in range(0, len(idx), self.max_batch):
        chunk = idx[lo:lo + self.max_batch]
        for i, c in zip(chunk, self._sample([conversations[i] for i in chunk], p,
                                            [params[i].seed for i in chunk])):
          out[i] = c
    return out

  def _sample(self, convs, p: SamplingParams, seeds) -> list[Completion]:
    n = len(convs)
    padded = sampling.bucket_length(n, minimum=self.min_batch)
    start = time.perf_counter()
    constraint = None if p.regex is None else token_dfa.compile_regex(
        self.tokenizer, p.regex, sampling.default_eos_ids(self.tokenizer, self.model.config))
    results = sampling.generate_text(
        self.model, self.tokenizer, list(convs) + [convs[0]] * (padded - n), self._key(seeds),
        max_new_tokens=p.max_tokens, temperature=p.temperature, top_p=p.top_p, top_k=p.top_k,
        stop=p.stop, template_kwargs=self.template_kwargs, constraint=constraint)[:n]
    # One sampler call serves the whole chunk; each request is charged the chunk's wall time.
    latency = time.perf_counter() - start
    return [Completion(text=r.text, input_tokens=r.prompt_tokens,
                       output_tokens=r.completion_tokens, latency_s=latency,
                       finish_reason=r.finish_reason) for r in results]

  # ---- embeddings -------------------------------------------------------------------------

  def _embed(self, texts):
    if not texts:
      return np.zeros((0, self.model.config.hidden_size), np.float32)
    encoded = [self.tokenizer.encode(t, add_special_tokens=False)[-self.embed_max_tokens:] or
               [self.tokenizer.pad_token_id] for t in texts]
    out = []
    for lo in range(0, len(encoded), self.max_batch):
      chunk = encoded[lo:lo + self.max_batch]
      length = sampling.bucket_length(max(len(t) for t in chunk))
      rows = sampling.bucket_length(len(chunk), minimum=1)
      ids, mask = sampling.left_pad(chunk + [chunk[0]] * (rows - len(chunk)),
                                    self.tokenizer.pad_token_id or 0, length)
      vecs = self._embed_jit(nnx.state(self.model), jnp.asarray(ids), jnp.asarray(mask))
      out.append(np.asarray(vecs)[:len(chunk)])
    return np.concatenate(out)

  def count_tokens(self, texts) -> int:
    """Total tokens of `texts`, no special tokens added.

    Args:
      texts: the strings.
    Returns:
      The sum of their token counts.
    """
    return sum(len(self.tokenizer.encode(t, add_special_tokens=False)) for t in texts)

  # ---- scoring ----------------------------------------------------------------------------

  def score(self, token_lists: list[list[int]], top_logprobs: int = 0) -> list[dict]:
    """Log-probs of every token of each sequence given the tokens before it (one teacher-forced
    forward per batch of up to max_batch sequences, jitted, padded to bucketed shapes).

    Args:
      token_lists: the sequences (each at least one token).
      top_logprobs: alternatives per position to return (0 = none).
    Returns:
      Per sequence {"logprobs": [None, lp_1, ..., lp_{T-1}] (the first token has no context),
      "top_ids", "top_logprobs": per position the `top_logprobs` most likely ids and their
      log-probs (None at position 0)}.
    """
    out = []
    pad = self.tokenizer.pad_token_id or 0
    for lo in range(0, len(token_lists), self.max_batch):
      chunk = [list(t) for t in token_lists[lo:lo + self.max_batch]]
      length = sampling.bucket_length(max(len(t) for t in chunk))
      rows = sampling.bucket_length(len(chunk), minimum=1)
      ids, mask = sampling.left_pad(chunk + [chunk[0]] * (rows - len(chunk)), pad, length)
      lps, top_ids, top_lps = jax.device_get(self._score_jit(
          nnx.state(self.model), jnp.asarray(ids), jnp.asarray(mask), max(top_logprobs, 1)))
      for row, toks in enumerate(chunk):
        start = length - len(toks)  # left padding: the row's tokens end at the last column
        seg = slice(start + 1, length)
        out.append({"logprobs": [None] + lps[row, seg].tolist(),
                    "top_ids": [None] + (top_ids[row, seg, :top_logprobs].tolist()
                                         if top_logprobs else [[]] * (len(toks) - 1)),
                    "top_logprobs": [None] + (top_lps[row, seg, :top_logprobs].tolist()
                                              if top_logprobs else [[]] * (len(toks) - 1))})
    return out


def score_tokens(model, ids, mask, top: int, chunk_tokens: int = chunked.LOSS_CHUNK_TOKENS):
  """Teacher-forced log-probs: position t holds log p(ids[t] | ids[:t]) (position 0 is left 0).
  The head and log-softmax run `chunk_tokens` positions at a time (`lib.models.chunked`), so a
  long prompt never holds [B, T, V] float32 logits.

  Args:
    model: the NNX model. ids, mask: left-padded [B, T]. top: alternatives per position.
    chunk_tokens: positions per head chunk (> 0).
  Returns:
    (float32 [B, T] chosen log-probs, int32 [B, T, top] ids, float32 [B, T, top] log-probs);
    column t describes the prediction of token t from the logits at t - 1.
  """
  hidden = model.hidden_states(ids, attention_mask=mask,
                               positions=train_state.positions_from_mask(mask))
  head_w = model.head_weight()

  def score(h, y):
    logp = jax.nn.log_softmax(chunked.head_logits(h, head_w), axis=-1)
    chosen = jnp.take_along_axis(logp, y[:, None], axis=-1)[:, 0]
    top_lps, top_ids = jax.lax.top_k(logp, top)
    return chosen, top_ids.astype(jnp.int32), top_lps

  chosen, top_ids, top_lps = chunked.map_token_chunks(score, chunk_tokens, hidden[:, :-1],
                                                      ids[:, 1:])
  pad_col = lambda x: jnp.concatenate([jnp.zeros_like(x[:, :1]), x], axis=1)
  return pad_col(chosen), pad_col(top_ids), pad_col(top_lps)
