"""The audit agent in the real host loop on an ALFWorld game, back to trajectories and metrics."""
import re

import pytest

pytest.importorskip("alfworld")

from agents.wm.agent import WorldModelAuditAgent  # noqa: E402
from agents.wm.metrics import episode_metrics  # noqa: E402
from agents.wm.trajectory import from_host_loop_row  # noqa: E402
from envs.text.alfworld_env import ALFWorld  # noqa: E402
from envs.text.alfworld_game import write_tiny_game  # noqa: E402
from lib.hostloop.loop import EpisodeJob, HostLoop  # noqa: E402
from lib.backends.scripted import ScriptedBackend  # noqa: E402
from lib.run.results import ResultsLog  # noqa: E402

PLAN = ["go to countertop 1", "take apple 1 from countertop 1", "go to cabinet 1",
        "open cabinet 1", "put apple 1 in/on cabinet 1"]


class PlanFollower:
  """Scripted 'model': garbles its first reply, then follows PLAN by counting executed steps."""

  def respond(self, messages, rng):
    prompt = messages[-1]["content"]
    step = int(re.search(r"This is step (\d+)\.", prompt).group(1))
    if step == 1:
      return "<think>I am not sure what to do.</think>"        # no action: parse failure
    listed = "Actions available now:" in prompt
    return f"<think>listed={listed}</think><action>{PLAN[step - 2]}</action>"


@pytest.mark.parametrize("regime", ["list", "no-list"])
def test_host_loop_episode(tmp_path, regime):
  root = str(tmp_path / "alf")
  write_tiny_game(root)
  log = ResultsLog(str(tmp_path / "run"), key=("task_id", "sample"))
  specs = [EpisodeJob({"task_id": "alfworld/pick/0", "sample": 0},
                       make_env=lambda: ALFWorld(root, "train"),
                       make_agent=lambda: WorldModelAuditAgent("alfworld", regime),
                       env_seed=0)]
  HostLoop(ScriptedBackend(PlanFollower()), action_budget=30, call_budget=30,
           show_progress=False).run(specs, log)
  row = log.rows()[0]
  assert row["status"] == "success" and row["agent"]["parse_failures"] == 1
  calls = [e for e in row["transcript"] if e["type"] == "call"]
  assert ("listed=True" in calls[1]["text"]) == (regime == "list")
  traj = from_host_loop_row(row, env="alfworld")
  assert traj.actions == [None] + PLAN and traj.success and traj.env == "alfworld"
  assert traj.steps[0].obs.startswith("You are in the middle of a room")
  m = episode_metrics(traj)
  assert (m["turns"], m["parse_failures"], m["action_failures"]) == (6, 1, 1)
  assert "apple" in traj.task
