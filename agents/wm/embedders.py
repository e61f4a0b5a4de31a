"""Text embedders for the GT/MIS rewards: list of N strings -> [N, D] array.

  qwen     the embedding head (last-token pooling) of a local Qwen checkpoint directory, e.g.
           Qwen3-Embedding-8B as in the audit (`agents.wm.rewards.model_embedder`)
  openai   an OpenAI-compatible /v1/embeddings endpoint (`lib.backends.openai_http`)
  lexical  hashed bag of lower-cased words: a transparent offline stand-in for CPU-scale runs,
           where no trained embedding model exists; it is named in every summary it feeds

    embed = make_embedder(config.embedder)
"""
import re
import zlib
from typing import Any, Callable

import numpy as np

from agents.wm import rewards
from lib.backends.openai_http import OpenAIBackend
from lib.models import model_setup
from lib.run import config_blocks

_WORD = re.compile(r"[a-z0-9]+")


def lexical_embedder(dim: int = 2048) -> Callable[[list[str]], np.ndarray]:
  """Word counts hashed (crc32, stable across runs) into `dim` buckets."""
  def embed(texts: list[str]) -> np.ndarray:
    out = np.zeros((len(texts), dim), np.float32)
    for i, t in enumerate(texts):
      for w in _WORD.findall(t.lower()):
        out[i, zlib.crc32(w.encode()) % dim] += 1.0
    return out
  return embed


def make_embedder(c: Any) -> Callable[[list[str]], np.ndarray]:
  """From a config block: kind, path (qwen), base_url/model/api_key_env (openai), dim (lexical),
  max_length (qwen)."""
  kind = c["kind"]
  if kind == "lexical":
    return lexical_embedder(int(c["dim"]))
  if kind == "qwen":
    if not c["path"]:
      raise ValueError("embedder kind 'qwen' needs embedder.path (a local checkpoint directory)")
    model, _, tok = model_setup.build_model(config_blocks.model_block(checkpoint=c["path"]),
                                            seed=0, dtype="bfloat16")
    if tok is None:
      raise FileNotFoundError(f"embedder.path {c['path']!r} has no tokenizer.json")
    return rewards.model_embedder(model, tok, max_length=int(c["max_length"]))
  if kind == "openai":
    backend = OpenAIBackend(c["base_url"], c["model"], api_key_env=c["api_key_env"],
                            embed_model=c["model"])
    return lambda texts: np.asarray(backend.embed(list(texts)), np.float32)
  raise ValueError(f"unknown embedder kind {kind!r}; valid: lexical, qwen, openai")
