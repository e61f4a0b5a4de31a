"""Supervision rows -> SFT arrays: chat-rendered prompt, then target + EOS, loss on the target.

Layout per row (left-padded to one length, so one compiled train step serves every batch, and
every answer ends at the last column: the train step scores only the last `target_window`
tokens, see lib.sft.step.make_sft_step):
  input_ids      prompt tokens (chat template with the assistant opener) + target tokens + EOS
  attention_mask 1 on real tokens
  loss_mask      1 on target tokens and EOS (lib.sft.step.causal_lm_loss scores token t from t - 1)
The prompt and target are tokenized separately, exactly as the sampler sees them at decode time
(prompt text in, continuation out).
"""
from agents.gencoord.learned import chat
from lib.sft import batches as sft_batches


def encode_rows(rows, tokenizer, surface: str, multiple: int = 16) -> dict:
  """-> {input_ids, attention_mask, loss_mask} int32 [N, T], per-row prompt/target lengths and
  target_window (the longest target + EOS: every loss token lies in the last target_window);
  `lib.sft.batches.left_padded` lays the rows out, `epoch_batches` draws from them."""
  eos = tokenizer.convert_tokens_to_ids(tokenizer.eos_token)
  examples = [(tokenizer.encode(chat.prompt_text(tokenizer, r.context, surface),
                                add_special_tokens=False),
               tokenizer.encode(r.target, add_special_tokens=False) + [eos]) for r in rows]
  return sft_batches.left_padded(examples, tokenizer.pad_token_id or 0, multiple)


def contrast_groups(rows) -> list[int]:
  """Group id per row: the rows of one world that differ only in binding and role view.

  Within one template, stage and scale, the k-th row of every (binding, role view) pair is one
  group (the suites draw bindings in alternation and give every cluster both role views, so the
  pairs have equally many rows there): 4 rows for the two-binding templates. A batch of whole
  groups holds each world with every binding and both role views at once, so the push towards
  "always write binding X" or "always send to agent_b" from one row is cancelled by its
  partners in the same update, and what is left of the gradient is the dependence on the
  binding and on the role. Rows without a full group (a subsample can leave a cell with a
  (binding, role view) pair missing or with unequal counts) get -1.
  """
  cells: dict = {}
  for i, r in enumerate(rows):
    key = (r.template, r.stage, r.context.observation.get("scale"))
    cells.setdefault(key, {}).setdefault((r.binding, r.role_view), []).append(i)
  out = [-1] * len(rows)
  gid = 0
  for by_pair in cells.values():
    bindings, views = {b for b, _ in by_pair}, {v for _, v in by_pair}
    if len(bindings) < 2 or len(views) < 2 or len(by_pair) != len(bindings) * len(views):
      continue
    for members in zip(*by_pair.values()):
      for i in members:
        out[i] = gid
      gid += 1
  return out
