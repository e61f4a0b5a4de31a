"""Supervision rows -> SFT arrays: chat-rendered prompt, then target + EOS, loss on the target.

Layout per row (left-padded to one length, so one compiled train step serves every batch, and
every answer ends at the last column: the train step scores only the last `target_window`
tokens, see lib.sft.make_sft_step):
  input_ids      prompt tokens (chat template with the assistant opener) + target tokens + EOS
  attention_mask 1 on real tokens
  loss_mask      1 on target tokens and EOS (lib.sft.causal_lm_loss scores token t from t - 1)
The prompt and target are tokenized separately, exactly as the sampler sees them at decode time
(prompt text in, continuation out).
"""
from agents.gencoord.learned import chat
from lib import sft_batches


def encode_rows(rows, tokenizer, surface: str, multiple: int = 16) -> dict:
  """-> {input_ids, attention_mask, loss_mask} int32 [N, T], per-row prompt/target lengths and
  target_window (the longest target + EOS: every loss token lies in the last target_window);
  `lib.sft_batches.left_padded` lays the rows out, `epoch_batches` draws from them."""
  eos = tokenizer.convert_tokens_to_ids(tokenizer.eos_token)
  examples = [(tokenizer.encode(chat.prompt_text(tokenizer, r.context, surface),
                                add_special_tokens=False),
               tokenizer.encode(r.target, add_special_tokens=False) + [eos]) for r in rows]
  return sft_batches.left_padded(examples, tokenizer.pad_token_id or 0, multiple)
