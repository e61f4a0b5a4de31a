"""Warm-start rows: expert agent replies in both regimes, built from what `collect` records."""
from agents.wm import warmstart
from agents.wm.prompts import agent_prompt, parse_action
from agents.wm.trajectory import ExpertPolicy, Step, Trajectory, collect
from envs.text.base import EpisodeSpec


class _Corridor:
  """Two rooms; the admissible list depends on the room (so a recorded list can be checked)."""

  spec = EpisodeSpec("textworld", "corridor")
  max_steps = 5

  def reset(self, seed):
    del seed
    self.room = "hall"
    return "You are in the hall.", self._info()

  def _info(self, failed=False):
    acts = ["go east", "look"] if self.room == "hall" else ["take key", "go west", "look"]
    return {"task": "take the key", "admissible_actions": acts, "action_failed": failed,
            "success": self.room == "done", "score": 100.0 * (self.room == "done")}

  def expert_actions(self):
    return ["go east", "take key"]

  def step(self, action):
    before = self._info()["admissible_actions"]
    if action == "go east" and self.room == "hall":
      self.room = "office"
    elif action == "take key" and self.room == "office":
      self.room = "done"
    info = self._info(failed=action not in before)
    return f"You are in the {self.room}.", float(self.room == "done"), self.room == "done", \
        False, info


def test_collect_records_the_list_each_action_was_chosen_from():
  traj = collect(_Corridor(), ExpertPolicy(), seed=0)
  assert traj.success and [s.action for s in traj.steps] == ["go east", "take key"]
  assert [s.admissible for s in traj.steps] == [["go east", "look"],
                                                ["take key", "go west", "look"]]
  assert Trajectory.from_json(traj.to_json()) == traj
  old = traj.to_json()                        # records written before the field existed
  for s in old["steps"]:
    del s["admissible"]
  assert Trajectory.from_json(old).steps[0].admissible is None


def test_agent_rows_cover_both_regimes_and_parse_back():
  traj = collect(_Corridor(), ExpertPolicy(), seed=0)
  traj.steps.append(Step("You are in the office.", "look", "Same office.", admissible=None))
  rows = warmstart.sft_rows([], [traj], history_window=1)
  # two listed steps x (no-list, list) + one unlisted step x no-list
  assert len(rows) == 5
  prompts = [m[0]["content"] for m, _ in rows]
  listed = [p for p in prompts if "Actions available now" in p]
  assert len(listed) == 2 and "[take key, go west, look]" in listed[1]
  assert rows[3][0][0]["content"] == agent_prompt(
      "textworld", "take the key", [("You are in the hall.", "go east")],
      "You are in the office.", 1, ["take key", "go west", "look"])
  for (msgs, reply), step in zip(rows, [s for s in traj.steps for _ in range(
      2 if s.admissible else 1)]):
    assert parse_action(reply, step.admissible) == step.action
  no_history = warmstart.sft_rows([], [traj], history_window=0)
  assert "(none" in no_history[2][0][0]["content"]   # window 0: no earlier step shown



def test_drop_repeats_keeps_one_row_per_run_of_a_repeated_step():
  # a noisy expert that lost its plan: "look" in the same room until the step limit
  stuck = [Step("You are in the hall.", "go west", "You can't go that way.", admissible=None)]
  stuck += [Step("You can't go that way.", "look", "You are in the hall.", admissible=None)]
  stuck += [Step("You are in the hall.", "look", "You are in the hall.", admissible=None)
            for _ in range(5)]
  traj = Trajectory("textworld", "textworld/corridor", "take the key", stuck, success=False,
                    score=0.0)
  replies = lambda rows: [r for _, r in rows]
  kept = warmstart.sft_rows([], [traj], history_window=1, drop_repeats=True)
  assert replies(kept) == [warmstart.agent_reply(a) for a in ("go west", "look", "look")]
  assert len(warmstart.sft_rows([], [traj], history_window=1)) == 7   # default keeps every step
  # the kept first "look" in the hall still shows the step before it as history
  assert "You can't go that way." in kept[2][0][0]["content"]


def test_sft_steps_from_epochs_or_steps():
  from ml_collections import ConfigDict   # the `sft` block is a ConfigDict in every config
  assert warmstart.sft_steps(ConfigDict(dict(steps=150, epochs=0.0, batch=8)), 1000) == 150
  # 4 passes over 1,001 rows in batches of 16: ceil(4004 / 16)
  assert warmstart.sft_steps(ConfigDict(dict(steps=150, epochs=4.0, batch=16)), 1001) == 251
  # every config sets `epochs` (configs/wm/demo.py: 0.0, sized by steps)
  from configs.wm import demo, study
  assert demo.get_config().sft.epochs == 0.0 and study.get_config().sft.epochs == 4.0
