"""What every host-loop text environment returns, and the failure codes they share.

Text envs follow the host-loop convention of CONTRIBUTING.md:

  reset(seed) -> (obs: str, info: dict)
  step(action: str) -> (obs: str, reward: float, terminated: bool, truncated: bool, info: dict)

and fill the same `info` keys so that agents, metrics and data builders never branch on the env:

  task                str         the goal in words (ScienceWorld task description, ALFWorld goal)
  score               float       the benchmark's own progress score (ScienceWorld 0..100; 0/100
                                  for ALFWorld/TextWorld won-or-not)
  success             bool        the benchmark's evaluator says the task is solved
  action_failed       bool        the last action was not executed (grammar or precondition
                                  failure, as the env reports it; see each env's `failed_action`)
  admissible_actions  list[str]   present only when the env can list them (ALFWorld, TextWorld,
                                  ScienceWorld with `list_actions=True`)
  env_error           str | None  set when the simulator itself failed (process died, hung, raised);
                                  the episode then ends with `terminated=True, success=False`
  steps               int         actions taken in this episode

An `env_error` ends only the episode: the env restarts its simulator on the next `reset`, so a
run over thousands of episodes records the code and goes on.
"""
import dataclasses

# Simulator failures (not agent failures): recorded per episode, never raised to the run.
ENV_DIED = "env_died"          # the simulator process exited or its connection broke
ENV_HANG = "env_hang"          # a simulator call did not return within the timeout
ENV_EXCEPTION = "env_exception"  # the simulator raised for a reason other than the two above
ENV_ERRORS = (ENV_DIED, ENV_HANG, ENV_EXCEPTION)


@dataclasses.dataclass
class EpisodeSpec:
  """One level of a text benchmark: enough to rebuild the same start state.

  `task` is a task family (ScienceWorld task name, ALFWorld task type, TextWorld game name),
  `variation` the instance inside it, `path` a game file where the env reads one.
  """
  env: str
  task: str
  variation: int = 0
  path: str = ""

  @property
  def task_id(self) -> str:
    """Stable id used as the pass@k cluster (one task instance)."""
    return f"{self.env}/{self.task}/{self.variation}"


def error_info(info: dict, code: str, detail: str) -> dict:
  """The info of a step cut short by a simulator failure."""
  if code not in ENV_ERRORS:
    raise ValueError(f"unknown env error code {code!r}; valid: {ENV_ERRORS}")
  return {**info, "env_error": code, "env_error_detail": detail, "success": False,
          "action_failed": True}
