"""SFT examples -> batches in `lib.sft.step`'s layout, as a function of the step index.

An example is (prompt ids, target ids): the loss falls on the target (which ends with EOS).
A batch source is `batch_at(step) -> {input_ids, attention_mask, loss_mask}` (int32 [B, T]) whose
batch depends only on (seed, step), so a resumed run replays exactly the stream an uninterrupted
one sees. Two layouts:

  left_padded + epoch_batches   every row left-padded to one length (answers end at the last
                                column, for `make_sft_step(target_window=K)`); each epoch a seeded
                                permutation cut into full batches (the ragged tail is dropped)
  length_grouped_batches        rows of very different lengths: right-padded batches drawn with
                                replacement from one power-of-two length bucket at a time
  interleave                    several sources taking turns, one batch each per round
"""
from typing import Callable, Sequence

import numpy as np

Example = tuple[Sequence[int], Sequence[int]]
BatchSource = Callable[[int], dict]
KEYS = ("input_ids", "attention_mask", "loss_mask")


def left_padded(examples: Sequence[Example], pad_id: int, multiple: int = 16) -> dict:
  """Examples -> one left-padded array set.

  Args:
    examples: (prompt ids, target ids) pairs.
    pad_id: id written into padding positions.
    multiple: the common length is the longest row rounded up to this.
  Returns:
    {input_ids, attention_mask, loss_mask}: int32 [N, T]; prompt_len, target_len: int32 [N];
    target_window: the longest target (every loss token lies in the last target_window columns).
  """
  length = longest_padded([len(p) + len(t) for p, t in examples], multiple)
  n = len(examples)
  out = {k: np.zeros((n, length), np.int32) for k in KEYS}
  out["input_ids"][:] = pad_id
  for i, (p, t) in enumerate(examples):
    seq = list(p) + list(t)
    out["input_ids"][i, length - len(seq):] = seq
    out["attention_mask"][i, length - len(seq):] = 1
    out["loss_mask"][i, length - len(t):] = 1
  out["prompt_len"] = np.array([len(p) for p, _ in examples], np.int32)
  out["target_len"] = np.array([len(t) for _, t in examples], np.int32)
  out["target_window"] = int(out["target_len"].max())
  return out


def steps_per_epoch(n_rows: int, batch: int, groups=None) -> int:
  """Full batches per epoch (the ragged tail is dropped; with `groups`, that of each group
  size: see `epoch_batches`).

  Args:
    n_rows: rows in the data set (fewer than `batch` raises ValueError).
    batch: rows per batch.
    groups: optional int [n_rows] group id per row (`epoch_batches`).
  Returns:
    n_rows // batch, or with groups the sum over group sizes z of (rows in groups of size z)
    // batch.
  """
  if n_rows < batch:
    raise ValueError(f"{n_rows} rows cannot fill one batch of {batch}")
  if groups is None:
    return n_rows // batch
  return sum(len(m) * size // batch for size, m in _groups_by_size(groups, n_rows, batch).items())


def _groups_by_size(groups, n: int, batch: int) -> dict[int, list[np.ndarray]]:
  """{group size: [row indices of each group of that size]} in ascending group id order;
  ValueError unless every size divides `batch`."""
  groups = np.asarray(groups)
  if groups.shape != (n,):
    raise ValueError(f"groups has shape {groups.shape}, expected ({n},)")
  by_size: dict[int, list[np.ndarray]] = {}
  for g in np.unique(groups):
    rows = np.flatnonzero(groups == g)
    by_size.setdefault(len(rows), []).append(rows)
  if any(batch % z for z in by_size):
    raise ValueError(f"every group size must divide batch {batch}; sizes {sorted(by_size)}")
  return dict(sorted(by_size.items()))


def epoch_batches(arrays: dict, batch: int, seed: int, groups=None) -> BatchSource:
  """batch_at(step): batch `step % steps_per_epoch` of epoch `step // steps_per_epoch`. Each
  epoch draws `rng = default_rng([seed, epoch])`; without `groups` its row order is
  `rng.permutation(N)`, cut into full batches. With `groups` of one size, it is a permutation of
  the groups (`rng.permutation(n_groups)`) with each group's rows kept together in order. With
  groups of several sizes, the groups of each size are taken in the order of that same
  permutation and cut into batches of one size each (so a batch never splits a group), and the
  batches are then shuffled by `rng.permutation(n_batches)`.

  Args:
    arrays: {input_ids, attention_mask, loss_mask} [N, T] (e.g. from `left_padded`).
    batch: rows per batch.
    seed: data-order seed.
    groups: optional int [N] group id per row, every group size dividing `batch`: each batch
      then holds whole groups (e.g. the contrast groups of
      `agents.gencoord.learned.sft_rows.contrast_groups`).
  Returns:
    batch_at(step) -> {input_ids, attention_mask, loss_mask} int32 [batch, T].
  """
  n = arrays["input_ids"].shape[0]
  per_epoch = steps_per_epoch(n, batch, groups)
  orders: dict[int, np.ndarray] = {}
  members = by_size = None
  if groups is not None:
    by_size = _groups_by_size(groups, n, batch)
    members = [m for ms in by_size.values() for m in ms]
    size_of = [len(m) for m in members]

  def order(epoch: int) -> np.ndarray:
    rng = np.random.default_rng([seed, epoch])
    if members is None:
      return rng.permutation(n)
    perm = rng.permutation(len(members))
    if len(by_size) == 1:
      return np.concatenate([members[g] for g in perm])
    cut = []                 # batches of one group size each, in permutation order
    for size in by_size:
      rows = np.concatenate([members[g] for g in perm if size_of[g] == size])
      cut += [rows[k * batch:(k + 1) * batch] for k in range(len(rows) // batch)]
    return np.concatenate([cut[k] for k in rng.permutation(len(cut))])

  def batch_at(step: int) -> dict:
    epoch, k = divmod(step, per_epoch)
    if epoch not in orders:
      orders.clear()            # steps run in order: one epoch's permutation is enough
      orders[epoch] = order(epoch)
    idx = orders[epoch][k * batch:(k + 1) * batch]
    return {key: arrays[key][idx] for key in KEYS}
  return batch_at


def interleave(sources: Sequence[BatchSource]) -> BatchSource:
  """batch_at(step): source `step % n`'s batch number `step // n`, for n sources in turn (e.g.
  full-context rows and a cheap short-context drill of the same task, each with its own batch
  size and padded length: the step compiles once per shape). Each source's batches depend only on
  their own index, so a resumed run still replays the uninterrupted stream.

  Args:
    sources: batch sources (`epoch_batches`, `length_grouped_batches`, ...), at least one.
  Returns:
    batch_at(step) -> the batch of source `step % len(sources)`.
  """
  if not sources:
    raise ValueError("interleave needs at least one batch source")
  n = len(sources)
  return lambda step: sources[step % n](step // n)


def lead_then_interleave(sources: Sequence[BatchSource], lead: int, lead_steps: int
                         ) -> BatchSource:
  """batch_at(step): source `lead`'s batches alone for the first `lead_steps` steps (a
  curriculum: e.g. a short-context drill learned before the full rows arrive), then
  `interleave(sources)` with source `lead` continuing where its lead stopped (no batch of it is
  replayed). A function of the step only, so a resumed run replays the uninterrupted stream.

  Args:
    sources: batch sources, at least one.
    lead: index of the source that leads.
    lead_steps: steps of the lead (0: exactly `interleave(sources)`).
  Returns:
    batch_at(step) -> a batch.
  """
  if not 0 <= lead < len(sources):
    raise ValueError(f"lead source {lead} of {len(sources)}")
  if lead_steps < 0:
    raise ValueError(f"lead_steps={lead_steps} < 0")
  n = len(sources)

  def batch_at(step: int):
    if step < lead_steps:
      return sources[lead](step)
    rest = step - lead_steps
    i = rest % n
    return sources[i](rest // n + (lead_steps if i == lead else 0))

  return batch_at


def bucket_lengths(lengths: Sequence[int], minimum: int = 64, multiple: int = 0) -> list[int]:
  """The padded length of each row under `length_grouped`'s buckets (what a memory plan of
  length-grouped batches plans for: `lib.plan.memory_plan`).

  Args:
    lengths: [N] row lengths in tokens.
    minimum: the smallest bucket length.
    multiple: bucket granularity in tokens (0: powers of two).
  Returns:
    [N] bucket lengths: the power of two at or above each length, or the length rounded up to
    `multiple`, at least `minimum`.
  """
  if multiple > 0:
    return [max(minimum, -(-int(n) // multiple) * multiple) for n in lengths]
  return [max(minimum, 1 << (int(n) - 1).bit_length()) for n in lengths]


def longest_padded(lengths: Sequence[int], multiple: int = 16) -> int:
  """The one padded length of `left_padded`: the longest row rounded up to `multiple`."""
  return -(-max(int(n) for n in lengths) // multiple) * multiple


def length_grouped(lengths: Sequence[int], minimum: int = 64, multiple: int = 0):
  """Batch drawing for rows of very different lengths: rows are bucketed by the power of two
  above their length (>= `minimum`), or by their length rounded up to `multiple` when it is > 0
  (less padding, one compiled shape per bucket: worth it when training runs long enough to
  amortise the extra compiles); `draw(batch, rng)` picks one row uniformly, then the whole
  batch (with replacement) from that row's bucket -> (row indices, padded length). Every bucket
  is chosen in proportion to its size, so every row keeps the same chance per step, while short
  rows do not pay for long ones; one compiled shape per bucket.

  Args:
    lengths: [N] row lengths in tokens.
    minimum: the smallest bucket length.
    multiple: bucket granularity in tokens (0: powers of two).
  Returns:
    draw(batch, rng: np.random.Generator) -> (int row indices [batch], bucket length).
  """
  bucket_of = bucket_lengths(lengths, minimum, multiple)
  members: dict = {}
  for i, b in enumerate(bucket_of):
    members.setdefault(b, []).append(i)

  def draw(batch: int, rng: np.random.Generator):
    length = bucket_of[int(rng.integers(len(bucket_of)))]
    return rng.choice(members[length], batch), length
  return draw


def length_grouped_batches(examples: Sequence[Example], batch: int, seed: int,
                           minimum: int = 64, multiple: int = 0,
                           left_pad: bool = False) -> BatchSource:
  """batch_at(step): `batch` rows drawn by `length_grouped` with `default_rng([seed, step])`,
  right-padded, or left-padded (`left_pad`: every target ends at the last column, the layout of
  `make_sft_step(target_window=K)` with K >= the longest target).

  Args:
    examples: (prompt ids, target ids) pairs.
    batch: rows per batch.
    seed: data seed.
    minimum: the smallest padded length.
    multiple: bucket granularity (see `length_grouped`).
    left_pad: pad on the left instead of the right.
  Returns:
    batch_at(step) -> {input_ids, attention_mask, loss_mask} int32 [batch, bucket length].
  """
  if not examples:
    raise ValueError("no SFT examples to draw batches from")
  draw = length_grouped([len(p) + len(t) for p, t in examples], minimum, multiple)

  def batch_at(step: int) -> dict:
    idx, length = draw(batch, np.random.default_rng([seed, step]))
    out = {k: np.zeros((batch, length), np.int32) for k in KEYS}
    for r, i in enumerate(idx):
      p, t = examples[i]
      n = len(p) + len(t)
      lo = length - n if left_pad else 0
      out["input_ids"][r, lo:lo + n] = list(p) + list(t)
      out["attention_mask"][r, lo:lo + n] = 1
      out["loss_mask"][r, lo + len(p):lo + n] = 1
    return out
  return batch_at
