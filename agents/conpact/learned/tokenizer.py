"""A byte-level BPE for ConPAct prompts and replies, trained on the study's supervision rows.

It is `lib.tokenizer.train_tokenizer` (same special tokens, ChatML template, Hugging Face format,
exact byte round trip) with one change: the pre-tokenizer. GPT-2's word regex cuts every word and
every board cell (" #") into its own piece, so a 3-frame Sokoban actor prompt costs ~870 tokens.
Here a piece is a run of text between delimiters -- a digit, a newline, a tag (`<state>`), ", "
or ": " -- each delimiter a piece of its own. BPE then learns the fixed phrases (the system prompt,
board rows, "steps forward and ", JSON keys, tags) as few tokens while every coordinate and count
stays one digit per token, which a small model copies from the observation into its assertion.
Measured on the debug rows: prompts ~360 tokens (GPT-2 style: ~870), replies ~38 (~68).
"""
from pathlib import Path
from typing import Iterable

import transformers
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

from lib import tokenizer as tokenizer_lib

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
