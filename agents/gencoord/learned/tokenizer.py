"""A byte-level BPE for GenCoord prompts and commitments, trained on the supervision rows.

It is `lib.tokenizer.train_tokenizer` (same special tokens, ChatML template, Hugging Face format,
exact byte round trip) with one change: the pre-tokenizer. GPT-2's word regex cuts
`item=oak_planks,` into five pieces before BPE can merge anything, so a Short DSL task costs
~15 tokens. Here pieces end at a DSL/JSON delimiter instead (`resource.obtain(`, `q=4,`,
`item=oak_planks)`), so BPE learns argument groups as tokens and a commitment costs ~15
tokens in all, while any string still encodes through the 256 byte symbols.
"""
from pathlib import Path
from typing import Iterable

import transformers
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

from lib import tokenizer as tokenizer_lib

_DELIMS = r"(),:{}\[\]|"
# A piece is an optional leading space, then non-space non-delimiters closed by one delimiter;
# or such a run without a delimiter; or whitespace.
SPLIT = rf" ?[^\s{_DELIMS}]*[{_DELIMS}]| ?[^\s{_DELIMS}]+|\s+"


def train_dsl_tokenizer(texts: Iterable[str], vocab_size: int, path
                        ) -> transformers.PreTrainedTokenizerFast:
  """Trains the BPE on `texts`, saves it at `path`, returns it loaded via `load_tokenizer`."""
  min_size = len(tokenizer_lib.SPECIAL_TOKENS) + 256
  if vocab_size < min_size:
    raise ValueError(f"vocab_size must be >= {min_size} (specials + 256 bytes), got {vocab_size}")
  bpe = Tokenizer(models.BPE())
  bpe.pre_tokenizer = pre_tokenizers.Sequence([
      pre_tokenizers.Split(Regex(SPLIT), behavior="isolated"),
      pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
  bpe.decoder = decoders.ByteLevel()
  trainer = trainers.BpeTrainer(vocab_size=vocab_size,
                                special_tokens=list(tokenizer_lib.SPECIAL_TOKENS),
                                initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                show_progress=False)
  bpe.train_from_iterator(texts, trainer=trainer)
  tok = transformers.PreTrainedTokenizerFast(
      tokenizer_object=bpe, eos_token=tokenizer_lib.IM_END, pad_token=tokenizer_lib.PAD,
      chat_template=tokenizer_lib.CHATML_TEMPLATE, padding_side="left",
      clean_up_tokenization_spaces=False)
  Path(path).mkdir(parents=True, exist_ok=True)
  tokenizer_lib.save_tokenizer(tok, path)
  return tokenizer_lib.load_tokenizer(path)
