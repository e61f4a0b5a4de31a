"""The trained policy's text side: the model of the `model` block with its tokenizer
(lib/models/model_setup.py), chat prompts rendered to token ids, padded batches, decoded responses,
the <next_state> span, export.

    model, tok = load_policy(config.model, seed, workdir, corpus)
    ids = encode_chat(tok, messages)                    # chat template + generation prompt
    batch_ids, batch_mask = pad_left([ids, ...], tok.pad_token_id)   # power-of-two length
    mask = next_state_span(tok, tokens, lengths)        # OPSD loss span
    export(model, params, tok, path)                    # HF dir for lib.backends FlaxBackend / vLLM
"""
import os
from typing import Any, Sequence

import numpy as np
from flax import nnx

from lib import models
from lib.generate import sampling
from lib.models import model_setup, tokenizer as tokenizer_lib

OPEN, CLOSE = "<next_state>", "</next_state>"


def load_policy(c: Any, seed: int, workdir: str, corpus: Sequence[str]):
  """The policy of `model` block `c` (lib/models/model_setup.py) with its tokenizer.

  Args:
    c: the `model` block. With c.checkpoint: a local HF dir (weights + tokenizer.json). Empty:
      `c.preset` at random with a byte-level BPE of `c.vocab_size` trained on `corpus` (the tiny
      CPU-scale model; the tokenizer is saved under <workdir>/tokenizer and is deterministic).
    seed: initialisation seed of a from-scratch model.
    workdir: the run directory.
    corpus: tokenizer training texts (unused with a checkpoint).
  Returns:
    (model, tokenizer).
  """
  model, _, tok = model_setup.build_model(c, seed=seed, tokenizer_texts=list(corpus),
                                          tokenizer_dir=os.path.join(workdir, "tokenizer"))
  if tok is None:
    raise FileNotFoundError(f"model.checkpoint {c.checkpoint!r} has no tokenizer.json")
  return model, tok


def eos_ids(tok, model) -> tuple[int, ...]:
  return sampling.default_eos_ids(tok, model.config)


def encode_chat(tok, messages: list[dict], prefill: str = "") -> list[int]:
  """Chat messages -> prompt token ids (generation prompt opened, then `prefill` text)."""
  text = tokenizer_lib.render_chat(tok, messages) + prefill
  return tok.encode(text, add_special_tokens=False)


def pad_left(rows: Sequence[Sequence[int]], pad_id: int, minimum: int = 16):
  """Left-pads to a power-of-two length (few compiled shapes) -> (ids, mask) int32 [B, L]."""
  length = sampling.bucket_length(max(len(r) for r in rows), minimum=minimum)
  return sampling.left_pad(rows, pad_id or 0, length)


def decode(tok, row, length: int) -> str:
  return tok.decode([int(t) for t in row[:length]], skip_special_tokens=True)


def _token_offsets(tok, row, text: str) -> np.ndarray:
  """End character offset of each token in `text` (the decoded row). Per-token decodes are used
  when they concatenate to `text`; otherwise (a byte-level token holding part of a multi-byte
  character) cumulative prefix decodes, which are exact but quadratic."""
  pieces = tok.batch_decode([[int(t)] for t in row], skip_special_tokens=False)
  if "".join(pieces) == text:
    return np.cumsum([len(p) for p in pieces]).astype(np.int64)
  return np.asarray([len(tok.decode([int(t) for t in row[:i + 1]], skip_special_tokens=False))
                     for i in range(len(row))], np.int64)


def next_state_span(tok, tokens: np.ndarray, lengths: np.ndarray) -> np.ndarray:
  """[R, N] 0/1: tokens that overlap the text from the first <next_state> up to and including
  its </next_state> (to the end of the response when unclosed). Rows without the tag get no
  tokens: the audit applies the OPSD loss to the generated next-observation span only."""
  out = np.zeros(tokens.shape, np.int32)
  for r in range(tokens.shape[0]):
    n = int(lengths[r])
    row = tokens[r, :n]
    text = tok.decode([int(t) for t in row], skip_special_tokens=False)
    start = text.find(OPEN)
    if start < 0:
      continue
    stop = text.find(CLOSE, start)
    stop = len(text) if stop < 0 else stop + len(CLOSE)
    ends = _token_offsets(tok, row, text)
    begins = np.concatenate([[0], ends[:-1]])
    out[r, :n] = (ends > start) & (begins < stop)
  return out


def export(model, params, tok, path: str) -> str:
  """Writes params into `model` and saves an HF-format directory with the tokenizer."""
  nnx.update(model, params)
  models.save_pretrained(model, model.config, path, tokenizer=tok)
  return path

