"""Next-observation samples: construction, seed-42 sampling, held-out filtering, MIS targets."""
import numpy as np

from agents.wm import data
from agents.wm.trajectory import Step, Trajectory
from lib.run.jsonl import write_jsonl


def make_trajs():
  a = Trajectory("alfworld", "alfworld/pick/0", "put apple", [
      Step("start", "go to countertop 1", "at counter"),
      Step("at counter", None, "at counter"),               # unparsed: no sample
      Step("at counter", "take apple 1 from countertop 1", "holding apple"),
      Step("holding apple", "go to cabinet 1", "cabinet closed")], True, 100.0)
  b = Trajectory("alfworld", "alfworld/pick/1", "put apple", [
      Step("start", "go to countertop 1", "at counter"),   # same transition as in `a`
      Step("at counter", "open fridge 1", "Nothing happens.", action_failed=True)], False, 0.0)
  return [a, b]


def test_transitions_history_and_skipping():
  s = data.transitions(make_trajs(), history_window=2)
  assert [x.action for x in s] == ["go to countertop 1", "take apple 1 from countertop 1",
                                   "go to cabinet 1", "go to countertop 1", "open fridge 1"]
  third = s[2]
  assert third.step == 3 and third.obs == "holding apple" and third.next_obs == "cabinet closed"
  assert third.history == [("at counter", None), ("at counter", "take apple 1 from countertop 1")]
  assert s[4].next_obs == "Nothing happens."   # refused actions are dynamics too
  assert len(data.dedup(s)) == 4


def test_sampling_is_seeded_without_replacement():
  pool = [data.WMSample("e", "t", "task", [], f"o{i}", "a", f"n{i}") for i in range(100)]
  first = data.sample(pool, 20, seed=42)
  assert [x.obs for x in first] == [x.obs for x in data.sample(pool, 20, seed=42)]
  assert len({x.obs for x in first}) == 20
  expected = np.random.default_rng(42).choice(100, size=20, replace=False)
  assert [x.obs for x in first] == [f"o{i}" for i in expected]
  assert len(data.sample(pool, 500)) == 100


def test_held_out_excludes_training_transitions():
  s = data.transitions(make_trajs())
  train = [s[0]]                               # "start --go to countertop 1--> at counter"
  test = data.held_out(s, train)
  assert all(x.key != train[0].key for x in test)
  assert {x.action for x in test} == {"take apple 1 from countertop 1", "go to cabinet 1",
                                      "open fridge 1"}
  assert len(data.held_out(s, train, n=2, seed=42)) == 2


def test_mismatched_targets_and_messages(tmp_path):
  s = data.dedup(data.transitions(make_trajs()))
  mis = data.with_mismatched_targets(s, seed=0)
  assert all(m.target != m.next_obs for m in mis)
  assert sorted(m.target for m in mis) == sorted(x.next_obs for x in s)
  assert [m.obs for m in mis] == [x.obs for x in s]    # inputs unchanged
  student = data.prompt_messages(mis[0])[0]["content"]
  teacher = data.teacher_messages(mis[0])[0]["content"]
  assert teacher.startswith(student) and teacher.rstrip().endswith(mis[0].target)
  path = str(tmp_path / "s.jsonl")
  write_jsonl(path, [m.to_json() for m in mis])
  assert data.load_samples(path) == mis
  tpath = str(tmp_path / "t.jsonl")
  write_jsonl(tpath, [t.to_json() for t in make_trajs()])
  assert data.load_trajectories(tpath) == make_trajs()
