"""A byte-level BPE for GenCoord prompts and commitments, trained on the supervision rows.

It is `lib.tokenizer.train_tokenizer` (same special tokens, ChatML template, Hugging Face format,
exact byte round trip) with one change: the pre-tokenizer. GPT-2's word regex cuts
`item=oak_planks,` into five pieces before BPE can merge anything, so a Short DSL task costs
~15 tokens. Here pieces end at a DSL/JSON delimiter instead (`resource.obtain(`, `q=4,`,
`item=oak_planks)`), so BPE learns argument groups as tokens and a commitment costs ~15
tokens in all, while any string still encodes through the 256 byte symbols.
"""
from typing import Iterable

import transformers

from lib import tokenizer as tokenizer_lib

_DELIMS = r"(),:{}\[\]|"
# A piece is an optional leading space, then non-space non-delimiters closed by one delimiter;
# or such a run without a delimiter; or whitespace.
SPLIT = rf" ?[^\s{_DELIMS}]*[{_DELIMS}]| ?[^\s{_DELIMS}]+|\s+"


def train_dsl_tokenizer(texts: Iterable[str], vocab_size: int, path
                        ) -> transformers.PreTrainedTokenizerFast:
  """Trains the BPE on `texts`, saves it at `path`, returns it loaded via `load_tokenizer`."""
  return tokenizer_lib.train_tokenizer(texts, vocab_size, path, split_pattern=SPLIT)
