"""Chat rows -> SFT examples: the prompt exactly as the Flax backend renders it at decode time,
then the target and one EOS; the loss falls on the target and EOS only.

A chat row is (messages, target): [{"role", "content"}] chat messages and the assistant's reply
text. Its example is (prompt ids, target ids + EOS), the `lib.sft.batches.Example` that the
batchers lay out (left or right padding, windows, buckets: `lib.sft.batches`):

  prompt ids  the tokenizer's chat template with the assistant opener
              (`lib.models.tokenizer.render_chat`, as `lib.generate.sampling.generate_text`
              renders a conversation for the Flax backend), tokenized without special tokens
  target ids  the target text tokenized on its own (the sampler's continuation), then `eos_id`

    examples = encode_rows(tok, [(messages, target), ...], max_len=2048)
    arrays = lib.sft.batches.left_padded(examples, tok.pad_token_id or 0)

`eos_id` is the one place that picks the token every SFT target ends with.
"""
from typing import Iterable, Sequence

from lib.models.tokenizer import IM_END, render_chat

ChatRow = tuple[Sequence[dict], str]


def eos_id(tokenizer) -> int:
  """The id written after every SFT target: <|im_end|> when the vocabulary has it, else the
  tokenizer's EOS.

  <|im_end|> is where ChatML (Qwen's chat template, and the template of the BPEs that
  `lib.models.tokenizer.train_tokenizer` trains) closes an assistant turn, and
  `lib.generate.sampling.default_eos_ids` always stops on it. `tokenizer.eos_token` is not
  enough: Qwen base checkpoints name <|endoftext|> there, which the chat template never writes
  after a reply. Tokenizers without ChatML fall back to their own EOS (which the sampler also
  stops on).

  Args:
    tokenizer: a Hugging Face tokenizer.
  Returns:
    The token id (ValueError when the tokenizer has neither).
  """
  im_end = tokenizer.convert_tokens_to_ids(IM_END)   # cheap, unlike get_vocab() per row
  if im_end is not None and im_end != tokenizer.unk_token_id:   # unknown tokens map to <unk>
    return im_end
  if tokenizer.eos_token_id is None:
    raise ValueError(f"tokenizer {tokenizer.name_or_path!r} has neither {IM_END} nor an EOS")
  return tokenizer.eos_token_id


def encode_row(tokenizer, messages: Sequence[dict], target: str,
               template_kwargs: dict | None = None) -> tuple[list[int], list[int]]:
  """One chat row -> (prompt ids, target ids + EOS).

  Args:
    tokenizer: a Hugging Face tokenizer with a chat template.
    messages: the prompt's chat messages.
    target: the reply text the loss falls on.
    template_kwargs: chat-template variables, the same the backend decodes with (e.g.
      enable_thinking=False for Qwen3).
  Returns:
    (prompt ids, target ids followed by `eos_id(tokenizer)`).
  """
  text = render_chat(tokenizer, list(messages), add_generation_prompt=True,
                     **(template_kwargs or {}))
  prompt = tokenizer.encode(text, add_special_tokens=False)
  return prompt, tokenizer.encode(target, add_special_tokens=False) + [eos_id(tokenizer)]


def encode_rows(tokenizer, rows: Iterable[ChatRow], max_len: int | None = None,
                template_kwargs: dict | None = None) -> list[tuple[list[int], list[int]]]:
  """Chat rows -> the (prompt ids, target ids + EOS) examples of the rows that fit `max_len`.

  Args:
    tokenizer: a Hugging Face tokenizer with a chat template.
    rows: (messages, target) pairs.
    max_len: the longest kept example (prompt + target + EOS); None keeps every row. Callers
      count the dropped rows as len(rows) - len(result).
    template_kwargs: chat-template variables (see `encode_row`).
  Returns:
    The examples, in row order.
  """
  out = []
  for messages, target in rows:
    prompt, tail = encode_row(tokenizer, messages, target, template_kwargs)
    if max_len is None or len(prompt) + len(tail) <= max_len:
      out.append((prompt, tail))
  return out
