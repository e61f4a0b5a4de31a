"""Tokenizers: Hugging Face fast tokenizers from local directories, and small byte-level BPEs
trained offline for the tiny models of tests and embedded defaults.

Trained tokenizers speak ChatML (<|im_start|>role\\n...<|im_end|>), the format of Qwen's own chat
template, so prompts, stop tokens and `lib.generate.sampling.generate_text` behave the same for
both.
"""
import json
from pathlib import Path
from typing import Iterable

import transformers
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

PAD = "<|endoftext|>"
IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
SPECIAL_TOKENS = (PAD, IM_START, IM_END)

# ChatML: every message is "<|im_start|>{role}\n{content}<|im_end|>\n"; the generation prompt opens
# an assistant turn. Kept minimal (no tools, no thinking blocks).
CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


def load_tokenizer(path) -> transformers.PreTrainedTokenizerFast:
  """A fast tokenizer from a local directory (tokenizer.json + tokenizer_config.json), no network.

  Left padding is set so batches line up with `lib.generate.sampling`; a missing pad token falls
  back to <|endoftext|> (Qwen's choice) or EOS.

  Args:
    path: the directory (FileNotFoundError without tokenizer.json).
  Returns:
    The PreTrainedTokenizerFast (TypeError if transformers loads a slow one).
  """
  path = Path(path)
  if not (path / "tokenizer.json").exists():
    raise FileNotFoundError(f"{path} has no tokenizer.json (a fast tokenizer is required)")
  tok = transformers.AutoTokenizer.from_pretrained(str(path), local_files_only=True, use_fast=True)
  if not tok.is_fast:
    raise TypeError(f"{path} loaded a slow tokenizer ({type(tok).__name__})")
  tok.padding_side = "left"
  if tok.pad_token is None:
    tok.pad_token = PAD if PAD in tok.get_vocab() else tok.eos_token
  return tok


def render_chat(tokenizer, messages: list[dict], add_generation_prompt: bool = True,
                **kwargs) -> str:
  """Chat messages -> prompt text through the tokenizer's own template (clear error if it has
  none).

  Args:
    tokenizer: a HF tokenizer with a chat_template (ValueError otherwise).
    messages: [{"role", "content"}] dicts.
    add_generation_prompt: append the assistant turn's opening.
    **kwargs: template variables (e.g. enable_thinking=False for Qwen3).
  Returns:
    The rendered prompt string (not tokenized).
  """
  if not getattr(tokenizer, "chat_template", None):
    raise ValueError(f"tokenizer {tokenizer.name_or_path!r} has no chat template")
  return tokenizer.apply_chat_template(messages, tokenize=False,
                                       add_generation_prompt=add_generation_prompt, **kwargs)


def train_tokenizer(texts: Iterable[str], vocab_size: int, path, split_pattern: str | None = None,
                    ) -> transformers.PreTrainedTokenizerFast:
  """Trains a byte-level BPE on `texts` and saves it in Hugging Face format at `path`.

  Any string encodes (256 byte symbols are always in the vocabulary) and decodes back exactly. The
  special tokens are ids 0..2; EOS is <|im_end|> (end of a chat turn), pad is <|endoftext|>. The
  saved directory loads with `load_tokenizer` and with transformers' AutoTokenizer.

  Args:
    texts: the training corpus.
    vocab_size: the vocabulary size, >= 3 specials + 256 bytes (ValueError otherwise).
    path: the directory to save it in (created if missing).
    split_pattern: None for GPT-2's word regex; else a regex whose matches are isolated as pieces
      before the byte-level mapping (a domain pre-tokenizer, e.g. one piece per DSL argument).
  Returns:
    The tokenizer as reloaded from `path` by `load_tokenizer` (ChatML template, left padding).
  """
  min_size = len(SPECIAL_TOKENS) + 256
  if vocab_size < min_size:
    raise ValueError(f"vocab_size must be >= {min_size} (specials + 256 bytes), got {vocab_size}")
  bpe = Tokenizer(models.BPE())
  if split_pattern is None:
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
  else:
    bpe.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(split_pattern), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
  bpe.decoder = decoders.ByteLevel()
  trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=list(SPECIAL_TOKENS),
                                initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                show_progress=False)
  bpe.train_from_iterator(texts, trainer=trainer)
  tok = transformers.PreTrainedTokenizerFast(
      tokenizer_object=bpe, eos_token=IM_END, pad_token=PAD, chat_template=CHATML_TEMPLATE,
      padding_side="left", clean_up_tokenization_spaces=False)
  Path(path).mkdir(parents=True, exist_ok=True)
  save_tokenizer(tok, path)
  return load_tokenizer(path)


# The class transformers 4.x and 5.x both resolve for a tokenizer.json-backed fast tokenizer
# (5.x writes "TokenizersBackend", which 4.x does not know).
PORTABLE_TOKENIZER_CLASS = "PreTrainedTokenizerFast"


def save_tokenizer(tok: transformers.PreTrainedTokenizerFast, path) -> None:
  """Saves a fast tokenizer in Hugging Face format that transformers 4.x and 5.x both load.

  Args:
    tok: the tokenizer (with its chat template, if any).
    path: directory to write tokenizer.json, tokenizer_config.json and chat_template.jinja to.
  """
  Path(path).mkdir(parents=True, exist_ok=True)
  tok.save_pretrained(str(path))
  config_path = Path(path) / "tokenizer_config.json"
  config = json.loads(config_path.read_text(encoding="utf-8"))
  config["tokenizer_class"] = PORTABLE_TOKENIZER_CLASS
  config.pop("backend", None)  # a 5.x-only key; 5.x picks the tokenizers backend from the file
  config_path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")
