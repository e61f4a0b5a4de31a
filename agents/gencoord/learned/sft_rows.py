"""Contrast groups of SFT rows: the rows of one world that differ only in binding and role view.

The rows themselves are encoded by the one chat-row encoder, `lib.sft.chat_rows.encode_rows`
(chat-rendered prompt with the assistant opener, then target + EOS, loss on target and EOS), over
`chat.sft_pairs(rows, surface)`, and laid out left-padded by `lib.sft.batches.left_padded` (every
answer ends at the last column: the train step scores only the last `target_window` tokens, see
lib.sft.step.make_sft_step).
"""


def contrast_groups(rows) -> list[int]:
  """Group id per row: the rows of one world that differ only in binding and role view.

  Within one template, stage and goal count, the k-th row of every (binding, role view) pair is one
  group (the suites draw bindings in alternation and give every cluster both role views, so the
  pairs have equally many rows there): 4 rows for the two-binding templates. A batch of whole
  groups holds each world with every binding and both role views at once, so the push towards
  "always write binding X" or "always send to agent_b" from one row is cancelled by its
  partners in the same update, and what is left of the gradient is the dependence on the
  binding and on the role. A stage only one role view has (the controlled free-form dialogue's
  extra intent/state round) groups its rows by binding alone: 2 rows. Rows without a full group
  (a subsample can leave a cell with a pair missing or with unequal counts) get -1.
  """
  cells: dict = {}
  for i, r in enumerate(rows):
    key = (r.template, r.stage, r.context.observation.get("goal_count"))
    cells.setdefault(key, {}).setdefault((r.binding, r.role_view), []).append(i)
  out = [-1] * len(rows)
  gid = 0
  for by_pair in cells.values():
    bindings, views = {b for b, _ in by_pair}, {v for _, v in by_pair}
    if len(bindings) < 2 or len(by_pair) != len(bindings) * len(views):
      continue
    for members in zip(*by_pair.values()):
      for i in members:
        out[i] = gid
      gid += 1
  return out
