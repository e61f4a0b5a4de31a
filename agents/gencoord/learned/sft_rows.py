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
import numpy as np

from agents.gencoord.learned import chat


def encode_rows(rows, tokenizer, surface: str, multiple: int = 16) -> dict:
  """-> {input_ids, attention_mask, loss_mask} int32 [N, T], per-row prompt/target lengths and
  target_window (the longest target + EOS: every loss token lies in the last target_window)."""
  eos = tokenizer.convert_tokens_to_ids(tokenizer.eos_token)
  pad = tokenizer.pad_token_id or 0
  prompts = [tokenizer.encode(chat.prompt_text(tokenizer, r.context, surface),
                              add_special_tokens=False) for r in rows]
  targets = [tokenizer.encode(r.target, add_special_tokens=False) + [eos] for r in rows]
  longest = max(len(p) + len(t) for p, t in zip(prompts, targets))
  length = -(-longest // multiple) * multiple
  n = len(rows)
  out = {k: np.zeros((n, length), np.int32) for k in ("input_ids", "attention_mask", "loss_mask")}
  out["input_ids"][:] = pad
  for i, (p, t) in enumerate(zip(prompts, targets)):
    seq = p + t
    out["input_ids"][i, length - len(seq):] = seq
    out["attention_mask"][i, length - len(seq):] = 1
    out["loss_mask"][i, length - len(t):] = 1
  out["prompt_len"] = np.array([len(p) for p in prompts], np.int32)
  out["target_len"] = np.array([len(t) for t in targets], np.int32)
  out["target_window"] = int(out["target_len"].max())
  return out


def batches(arrays: dict, batch: int, epoch: int, seed: int):
  """One epoch of shuffled full batches (the tail that does not fill a batch is dropped);
  the order depends only on (seed, epoch), so a resumed run replays the same stream."""
  n = arrays["input_ids"].shape[0]
  order = np.random.default_rng([seed, epoch]).permutation(n)
  keys = ("input_ids", "attention_mask", "loss_mask")
  for lo in range(0, n - batch + 1, batch):
    idx = order[lo:lo + batch]
    yield {k: arrays[k][idx] for k in keys}


def steps_per_epoch(n_rows: int, batch: int) -> int:
  if n_rows < batch:
    raise ValueError(f"{n_rows} rows cannot fill one batch of {batch}")
  return n_rows // batch
