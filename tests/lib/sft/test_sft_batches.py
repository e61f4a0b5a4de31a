"""lib/sft/batches.py: left-padded arrays, seeded epoch batches, length-grouped batches."""
import numpy as np
import pytest

from lib.sft import batches as sft_batches


def _examples(n, seed=0):
  rng = np.random.default_rng(seed)
  return [(rng.integers(5, 50, rng.integers(2, 30)).tolist(), rng.integers(5, 50, 3).tolist() + [1])
          for _ in range(n)]


def test_left_padded_puts_every_target_at_the_end():
  ex = _examples(10)
  arr = sft_batches.left_padded(ex, pad_id=0, multiple=16)
  assert arr["input_ids"].shape[1] % 16 == 0 and arr["target_window"] == 4
  for i, (p, t) in enumerate(ex):
    n = len(p) + len(t)
    assert arr["input_ids"][i, -n:].tolist() == p + t and not arr["attention_mask"][i, :-n].any()
    assert arr["loss_mask"][i].sum() == len(t) and arr["loss_mask"][i, -len(t):].all()
    assert (arr["prompt_len"][i], arr["target_len"][i]) == (len(p), len(t))


def test_epoch_batches_are_seeded_permutations():
  arr = sft_batches.left_padded(_examples(24), pad_id=0)
  batch_at = sft_batches.epoch_batches(arr, 8, seed=3)
  again = sft_batches.epoch_batches(arr, 8, seed=3)
  epoch1 = [batch_at(s)["input_ids"] for s in range(3, 6)]
  assert all(np.array_equal(x, again(s)["input_ids"]) for x, s in zip(epoch1, range(3, 6)))
  assert sorted(map(tuple, np.concatenate(epoch1))) == sorted(map(tuple, arr["input_ids"]))
  epoch2 = [batch_at(s)["input_ids"] for s in range(6, 9)]
  assert not all(np.array_equal(x, y) for x, y in zip(epoch1, epoch2))
  order = np.random.default_rng([3, 1]).permutation(24)[:8]      # step 3 = epoch 1, batch 0
  np.testing.assert_array_equal(epoch1[0], arr["input_ids"][order])
  with pytest.raises(ValueError):
    sft_batches.steps_per_epoch(4, 8)


def test_epoch_batches_keep_groups_together():
  arr = sft_batches.left_padded(_examples(24), pad_id=0)
  groups = np.arange(24) // 2                       # pairs (0, 1), (2, 3), ...
  batch_at = sft_batches.epoch_batches(arr, 8, seed=5, groups=groups)
  row_of = {tuple(r): i for i, r in enumerate(arr["input_ids"])}
  for step in range(6):                             # two epochs
    rows = [row_of[tuple(r)] for r in batch_at(step)["input_ids"]]
    assert sorted(groups[rows].tolist()) == sorted(2 * sorted(set(groups[rows].tolist())))
  epoch = [row_of[tuple(r)] for s in range(3) for r in batch_at(s)["input_ids"]]
  assert sorted(epoch) == list(range(24))
  perm = np.random.default_rng([5, 0]).permutation(12)
  assert epoch[:8] == [i for g in perm[:4] for i in (2 * g, 2 * g + 1)]
  with pytest.raises(ValueError, match="divide batch"):
    sft_batches.epoch_batches(arr, 8, 0, groups=np.arange(24) // 3)
  with pytest.raises(ValueError, match="shape"):
    sft_batches.epoch_batches(arr, 8, 0, groups=np.arange(12))


def test_epoch_batches_with_groups_of_two_sizes_never_mix_or_split_them():
  # 8 groups of 4 rows (32 rows) and 12 groups of 2 (24 rows), interleaved ids; batch 8
  n4, n2 = 8, 12
  groups = np.r_[np.repeat(np.arange(0, 2 * n4, 2), 4), np.repeat(np.arange(1, 2 * n2, 2), 2)]
  arr = sft_batches.left_padded(_examples(len(groups)), pad_id=0)
  assert sft_batches.steps_per_epoch(len(groups), 8, groups) == 4 + 3
  batch_at = sft_batches.epoch_batches(arr, 8, seed=2, groups=groups)
  row_of = {tuple(r): i for i, r in enumerate(arr["input_ids"])}
  seen, kinds = [], []
  for step in range(7):                             # one epoch
    rows = [row_of[tuple(r)] for r in batch_at(step)["input_ids"]]
    sizes = {int((groups == g).sum()) for g in groups[rows]}
    assert len(sizes) == 1                          # one group size per batch
    size = sizes.pop()
    assert sorted(groups[rows].tolist()) == sorted(size * sorted(set(groups[rows].tolist())))
    seen += rows
    kinds.append(size)
  assert sorted(seen) == list(range(len(groups)))   # every row once
  assert sorted(kinds) == [2, 2, 2, 4, 4, 4, 4]
  assert kinds != [4, 4, 4, 4, 2, 2, 2]             # the batch order is shuffled (this seed)
  nxt = [row_of[tuple(r)] for s in range(7, 14) for r in batch_at(s)["input_ids"]]
  assert nxt != seen and sorted(nxt) == sorted(seen)


def test_length_grouped_batches_share_one_bucket_and_sample_rows_uniformly():
  lengths = [30] * 60 + [200] * 30 + [300] * 10      # buckets 64, 256, 512
  draw = sft_batches.length_grouped(lengths)
  counts = np.zeros(len(lengths))
  shapes = set()
  for it in range(4000):
    idx, length = draw(4, np.random.default_rng([0, it]))
    assert all(lengths[i] <= length for i in idx)
    assert len({max(64, 1 << (lengths[i] - 1).bit_length()) for i in idx}) == 1
    shapes.add(length)
    np.add.at(counts, idx, 1)
  assert shapes == {64, 256, 512}
  # each row's share of draws is 1/100 (bucket chosen by size, then uniform inside it)
  share = counts / counts.sum()
  assert abs(share[:60].sum() - 0.6) < 0.03 and abs(share[90:].sum() - 0.1) < 0.02
  assert share.max() < 3 * share.min()


def test_length_grouped_batches_are_right_padded_and_replayable():
  ex = _examples(40)
  batch_at = sft_batches.length_grouped_batches(ex, 4, seed=7, minimum=16)
  b = batch_at(5)
  idx, length = sft_batches.length_grouped([len(p) + len(t) for p, t in ex], 16)(
      4, np.random.default_rng([7, 5]))
  assert b["input_ids"].shape == (4, length)
  for r, i in enumerate(idx):
    p, t = ex[i]
    n = len(p) + len(t)
    assert b["input_ids"][r, :n].tolist() == p + t and not b["attention_mask"][r, n:].any()
    assert b["loss_mask"][r].tolist() == [0] * len(p) + [1] * len(t) + [0] * (length - n)
  assert all(np.array_equal(b[k], batch_at(5)[k]) for k in sft_batches.KEYS)


def test_multiple_buckets_and_left_padding_put_every_target_at_the_end():
  ex = _examples(40)
  lengths = [len(p) + len(t) for p, t in ex]
  draw = sft_batches.length_grouped(lengths, minimum=8, multiple=8)
  for it in range(50):
    idx, length = draw(4, np.random.default_rng([1, it]))
    assert length % 8 == 0 and all(length - 8 < max(8, lengths[i]) <= length for i in idx)
  batch_at = sft_batches.length_grouped_batches(ex, 4, seed=3, minimum=8, multiple=8,
                                                left_pad=True)
  b = batch_at(2)
  idx, length = draw(4, np.random.default_rng([3, 2]))
  for r, i in enumerate(idx):
    p, t = ex[i]
    n = len(p) + len(t)
    assert b["input_ids"][r, length - n:].tolist() == p + t
    assert not b["attention_mask"][r, :length - n].any() and b["attention_mask"][r, -n:].all()
    assert b["loss_mask"][r].tolist() == [0] * (length - len(t)) + [1] * len(t)


def test_bucket_and_longest_padded_lengths_are_what_the_batches_pad_to():
  # the lengths a memory plan plans for (lib.plan.memory_breakdown.padded_lengths)
  assert sft_batches.bucket_lengths([1, 64, 65, 300]) == [64, 64, 128, 512]
  assert sft_batches.bucket_lengths([1, 64, 65, 300], multiple=128) == [128, 128, 128, 384]
  assert sft_batches.longest_padded([250, 368]) == 368 and sft_batches.longest_padded([369]) == 384
  examples = [([5] * 200, [6] * 100), ([5] * 40, [6] * 8)]
  assert sft_batches.left_padded(examples, pad_id=0)["input_ids"].shape == (2, 304)
  draw = sft_batches.length_grouped([300, 48], multiple=128)
  lengths = {draw(1, np.random.default_rng(s))[1] for s in range(20)}
  assert lengths == set(sft_batches.bucket_lengths([300, 48], multiple=128)) == {384, 128}


def test_interleave_takes_turns_and_replays_each_source_by_its_own_index():
  long = sft_batches.left_padded(_examples(16, seed=1), pad_id=0)
  short = sft_batches.left_padded([(p[:3], t) for p, t in _examples(40, seed=2)], pad_id=0)
  a, b = sft_batches.epoch_batches(long, 8, seed=0), sft_batches.epoch_batches(short, 20, seed=0)
  mixed = sft_batches.interleave([a, b])
  for step in range(8):
    want = (a if step % 2 == 0 else b)(step // 2)
    got = mixed(step)
    assert got["input_ids"].shape == want["input_ids"].shape
    np.testing.assert_array_equal(got["input_ids"], want["input_ids"])
  assert mixed(0)["input_ids"].shape[0] == 8 and mixed(1)["input_ids"].shape[0] == 20
  with pytest.raises(ValueError):
    sft_batches.interleave([])


def test_lead_then_interleave_leads_with_one_source_then_continues_it_without_replay():
  long = sft_batches.left_padded(_examples(16, seed=1), pad_id=0)
  short = sft_batches.left_padded([(p[:3], t) for p, t in _examples(40, seed=2)], pad_id=0)
  a, b = sft_batches.epoch_batches(long, 8, seed=0), sft_batches.epoch_batches(short, 4, seed=0)
  led = sft_batches.lead_then_interleave([a, b], lead=1, lead_steps=3)
  # b's batches 0, 1, 2 alone; then a 0, b 3, a 1, b 4: b is never replayed
  want = [b(0), b(1), b(2), a(0), b(3), a(1), b(4)]
  for step, w in enumerate(want):
    np.testing.assert_array_equal(led(step)["input_ids"], w["input_ids"])
  plain = sft_batches.interleave([a, b])
  no_lead = sft_batches.lead_then_interleave([a, b], lead=1, lead_steps=0)
  for step in range(6):
    np.testing.assert_array_equal(no_lead(step)["input_ids"], plain(step)["input_ids"])
  with pytest.raises(ValueError):
    sft_batches.lead_then_interleave([a, b], lead=2, lead_steps=1)
