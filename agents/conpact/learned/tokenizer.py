"""A byte-level BPE for ConPAct prompts and replies, trained on the study's supervision rows.

It is `lib.models.tokenizer.train_tokenizer` (same special tokens, ChatML template, Hugging Face
format, exact byte round trip) with one change: the pre-tokenizer. GPT-2's word regex cuts every
word and every board cell (" #") into its own piece, so a 3-frame Sokoban actor prompt costs ~870
tokens. Here a piece is a run of text between delimiters -- a digit, a newline, a tag (`<state>`),
", " or ": " -- each delimiter a piece of its own. BPE then learns the fixed phrases (the system
prompt, board rows, "steps forward and ", JSON keys, tags) as few tokens while every coordinate and
count stays one digit per token, which a small model copies from the observation into its assertion.
Measured on the debug rows: prompts ~360 tokens (GPT-2 style: ~870), replies ~38 (~68).
"""
from typing import Iterable

import transformers

from lib.models import tokenizer as tokenizer_lib

SPLIT = r"\d|\n|<[^>]*>|, |: "  # delimiters, each isolated as its own piece


def train_conpact_tokenizer(texts: Iterable[str], vocab_size: int, path
                            ) -> transformers.PreTrainedTokenizerFast:
  """Trains the BPE on `texts`, saves it at `path`, returns it loaded via `load_tokenizer`.

  Args:
    texts: the training corpus (messages and targets of the rows).
    vocab_size: vocabulary size, >= 3 specials + 256 bytes (ValueError otherwise).
    path: the directory to save it in (created if missing).
  Returns:
    The tokenizer as reloaded from `path` (ChatML template, left padding).
  """
  return tokenizer_lib.train_tokenizer(texts, vocab_size, path, split_pattern=SPLIT)
