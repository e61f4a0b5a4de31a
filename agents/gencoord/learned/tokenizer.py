"""A byte-level BPE for GenCoord prompts and commitments, trained on the supervision rows.

It is `lib.models.tokenizer.train_tokenizer` (same special tokens, ChatML template, Hugging Face
format, exact byte round trip) with one change: the pre-tokenizer. GPT-2's word regex cuts
`item=oak_planks,` into five pieces before BPE can merge anything, so a Short DSL task costs ~15
tokens. Here pieces end at a DSL/JSON delimiter instead (`resource.obtain(`, `to=agent_b)`,
`item=oak_planks,`), so BPE learns argument groups as tokens, while any string still encodes
through the 256 byte symbols. Codebook ids (bindings) and item names are pieces of their own
(see SPLIT), and so is every digit: a number is read and written digit by digit (`q=16,` is `q=`,
`1`, `6`, `,`).
"""
from typing import Iterable

import transformers

from envs.minecraft import recipes
from lib.models import tokenizer as tokenizer_lib

_DELIMS = r"(),:{}\[\]|"
# A codebook id (a binding, SELF, REQ: an upper-case word of 3+ characters) is a piece of its own
# with nothing attached, so one token stands for it wherever it occurs: in the observation
# (`"active_binding":"SITE_B"`), the structure (`SITE_B:S0`), the codebook, the incoming request
# and the answer (`bind=SITE_B,`). Glued to its neighbours it was five different tokens
# (`"SITE_B",`, ` SITE_B:`, `SITE_B,`, `bind=SITE_B,`, ...) whose link a tiny model learns one
# template at a time: before this split, from-scratch models copied the wrong `bind=` in the
# request of Build Site, Chest A/B and Dual Build for whole template-bindings at a time
# (configs/gencoord/README.md, the validation diagnosis).
_ID = r"\b[A-Z][A-Z0-9_]{2,}\b"
# An item name is a piece of its own too, for the same reason: the sender's obtain quantity is
# what the goal needs minus what it holds of the item its path names, so the model must find the
# structure's `item=oak_planks)` in the inventory's `"oak_planks":`. Glued to the delimiters
# around them those were different tokens (`item=oak_planks)`, `item=oak_planks,`,
# `"oak_planks":`) with nothing in common for a from-scratch model to match; with this split they
# share the `oak_planks` token, wherever it occurs.
# Longest first (a name never loses to a shorter one it starts with), then alphabetical: `ITEMS`
# is a set, and its iteration order follows PYTHONHASHSEED, so without the tie-break the saved
# tokenizer.json would differ between processes (it tokenizes the same).
_ITEM = r"\b(?:" + "|".join(sorted(recipes.ITEMS, key=lambda s: (-len(s), s))) + r")\b"
# Quantities and counts (goal count, inventory, `q=`) range over 1-32 and more: with digits
# glued to their argument (`q=16,` one piece) each number a BPE merges is a token of its own
# that a model must learn separately, and a count never seen in training has no merged token
# at all. One piece per digit makes every number the same few symbols.
_CHAR = rf"(?:(?!{_ID}|{_ITEM})[^\s\d{_DELIMS}])"
# A piece is a codebook id; or an item name; or one digit; or an optional leading space, then
# non-space non-digit non-delimiters closed by one delimiter; or such a run without a delimiter;
# or whitespace.
SPLIT = rf"{_ID}|{_ITEM}|\d| ?{_CHAR}*[{_DELIMS}]| ?{_CHAR}+|\s+"
# The alternative: a number is one piece, which BPE merges into one token when it is frequent
# (every count the rows use often), so a count is read and a quantity written as one symbol.
SPLIT_WHOLE_NUMBERS = SPLIT.replace(r"|\d|", r"|\d+|")
NUMBERS = {"digits": SPLIT, "whole": SPLIT_WHOLE_NUMBERS}


def train_dsl_tokenizer(texts: Iterable[str], vocab_size: int, path, numbers: str = "digits"
                        ) -> transformers.PreTrainedTokenizerFast:
  """Trains the BPE on `texts`, saves it at `path`, returns it loaded via `load_tokenizer`.

  `numbers`: "digits" (one token per digit) or "whole" (one piece per number, see NUMBERS).
  """
  if numbers not in NUMBERS:
    raise ValueError(f"numbers must be one of {sorted(NUMBERS)}, got {numbers!r}")
  return tokenizer_lib.train_tokenizer(texts, vocab_size, path, split_pattern=NUMBERS[numbers])
