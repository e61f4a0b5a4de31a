"""The one chat-row encoder (lib/sft/chat_rows.py) on a real-format (ChatML, byte-level BPE)
tokenizer: the row is the decode-time prompt + target + EOS, the loss covers exactly target + EOS,
and EOS is a token the sampler stops on."""
import types

import pytest
import transformers
from tokenizers import Tokenizer, models as tok_models

from lib.generate import sampling
from lib.models import tokenizer as tokenizer_lib
from lib.sft import batches, chat_rows

MESSAGES = [{"role": "system", "content": "Answer with one move."},
            {"role": "user", "content": "The door is north. Where do you go?"}]
TARGET = "<action>go north</action>"
CORPUS = [f"{m['content']} {TARGET} step {i}" for i in range(40) for m in MESSAGES]


@pytest.fixture(scope="module")
def tok(tmp_path_factory):
  return tokenizer_lib.train_tokenizer(CORPUS, 320, tmp_path_factory.mktemp("bpe"))


def test_row_is_the_decode_time_prompt_then_target_then_eos(tok):
  prompt, target = chat_rows.encode_row(tok, MESSAGES, TARGET)
  rendered = tokenizer_lib.render_chat(tok, MESSAGES)      # what the Flax backend feeds
  assert rendered.endswith("<|im_start|>assistant\n")
  assert prompt == tok.encode(rendered, add_special_tokens=False)
  assert target == tok.encode(TARGET, add_special_tokens=False) + [tok.get_vocab()["<|im_end|>"]]
  # prompt + target is the whole conversation as ChatML writes it (the reply's turn closed by
  # <|im_end|>, only the newline after it missing)
  full = tokenizer_lib.render_chat(tok, MESSAGES + [{"role": "assistant", "content": TARGET}],
                                   add_generation_prompt=False)
  assert tok.decode(prompt + target) == full.rstrip("\n")


def test_loss_mask_covers_exactly_target_and_eos(tok):
  rows = [(MESSAGES, TARGET), (MESSAGES[1:], "<action>look</action>")]
  examples = chat_rows.encode_rows(tok, rows)
  arrays = batches.left_padded(examples, tok.pad_token_id, multiple=8)
  for i, (_, target) in enumerate(rows):
    ids, mask = arrays["input_ids"][i], arrays["loss_mask"][i].astype(bool)
    assert tok.decode(ids[mask].tolist()) == target + "<|im_end|>"
    real = arrays["attention_mask"][i].astype(bool)
    assert tok.decode(ids[real & ~mask].tolist()) == tokenizer_lib.render_chat(tok, rows[i][0])


def test_eos_is_what_the_sampler_stops_on(tok):
  eos = chat_rows.eos_id(tok)
  # a from-scratch model's config carries the tokenizer's EOS (lib.models.model_setup)
  config = types.SimpleNamespace(eos_token_ids=(tok.convert_tokens_to_ids(tok.eos_token),))
  assert eos in sampling.default_eos_ids(tok, config)
  assert eos == tok.eos_token_id == tok.get_vocab()["<|im_end|>"]
  _, target = chat_rows.encode_row(tok, MESSAGES, TARGET)
  assert sampling.finish_row(tok, target, sampling.default_eos_ids(tok, config)) == (
      TARGET, len(target), "stop")


def test_eos_is_the_chat_turn_end_even_when_the_tokenizer_names_endoftext(tmp_path, tok):
  # Qwen base checkpoints set eos_token=<|endoftext|>; the chat template still closes a reply
  # with <|im_end|>, and the sampler stops on both.
  base = tokenizer_lib.load_tokenizer(tok.name_or_path)
  base.eos_token = tokenizer_lib.PAD
  assert base.eos_token_id != tok.get_vocab()["<|im_end|>"]
  assert chat_rows.eos_id(base) == tok.get_vocab()["<|im_end|>"]
  assert chat_rows.eos_id(base) in sampling.default_eos_ids(base)


def test_a_tokenizer_without_chatml_falls_back_to_its_eos():
  vocab = {"<unk>": 0, "</s>": 1, "go": 2}
  wl = Tokenizer(tok_models.WordLevel(vocab, unk_token="<unk>"))
  plain = transformers.PreTrainedTokenizerFast(tokenizer_object=wl, unk_token="<unk>",
                                               eos_token="</s>")
  assert chat_rows.eos_id(plain) == 1             # not <unk>, which <|im_end|> maps to here
  plain.eos_token = None
  with pytest.raises(ValueError, match="neither"):
    chat_rows.eos_id(plain)


def test_max_len_drops_long_rows_and_template_kwargs_reach_the_template(tok):
  short, long_ = (MESSAGES[1:], "<action>go</action>"), (MESSAGES, TARGET * 4)
  n_short = sum(map(len, chat_rows.encode_row(tok, *short)))
  assert len(chat_rows.encode_rows(tok, [short, long_])) == 2
  kept = chat_rows.encode_rows(tok, [long_, short, long_], max_len=n_short)
  assert kept == [chat_rows.encode_row(tok, *short)]
  flagged = tokenizer_lib.load_tokenizer(tok.name_or_path)
  flagged.chat_template = tokenizer_lib.CHATML_TEMPLATE + "{% if think %}<think>{% endif %}"
  plain, _ = chat_rows.encode_row(flagged, MESSAGES, TARGET)
  thinking, _ = chat_rows.encode_row(flagged, MESSAGES, TARGET, template_kwargs={"think": True})
  assert tok.decode(thinking) == tok.decode(plain) + "<think>"
