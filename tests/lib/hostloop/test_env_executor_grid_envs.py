"""The env executors on the ConPAct grid envs (the Sokoban and MiniGrid text adapters over JAX
envs, which import JAX and compile their step in every worker, Crafter, and Procgen's maze when
procgen is installed): `inline`, `processes` and `ray` write the same results.jsonl rows with the
ConPAct-I agents and the scripted ConPAct policy."""
import functools
import importlib.util

import pytest

pytest.importorskip("crafter")
ray = pytest.importorskip("ray")

from agents.conpact import methods, textenv  # noqa: E402
from agents.conpact.scripted import ConPActScriptedPolicy  # noqa: E402
from lib.hostloop.executors import InlineExecutor, ProcessExecutor  # noqa: E402
from lib.hostloop.loop import EpisodeJob, HostLoop  # noqa: E402
from lib.hostloop.ray_executor import RayExecutor, start_ray  # noqa: E402
from lib.backends.scripted import NoiseModel, ScriptedBackend  # noqa: E402
from lib.run.results import ResultsLog  # noqa: E402

from test_env_executor import comparable  # noqa: E402

# ray.init starts Ray's own daemons with subprocess (fork, then exec at once), which JAX's fork
# warning cannot tell from a bare fork of a multithreaded process.
pytestmark = [pytest.mark.long_module(100),   # JAX in every worker; scheduled first: conftest.py
              pytest.mark.filterwarnings(r"ignore:os\.fork\(\) was called:RuntimeWarning")]

# Two workers: a JAX env compiles in each one, and two cores compile two at a time.
WORKERS, BUDGET = 2, 6


@pytest.fixture(scope="module", autouse=True)
def local_ray():
  start_ray("")   # what host.ray_address="" does
  yield
  ray.shutdown()


def instances(env: str) -> list[textenv.Instance]:
  """Two evaluation instances of a ConPAct env (one BabyAI task for MiniGrid, levels of one
  Procgen game)."""
  if env == "sokoban":
    return textenv.sokoban_instances("evaluation", 2)
  if env == "minigrid":
    return textenv.minigrid_instances(("BabyAI-GoToRedBall-v0",), per_task=2)
  if env == "crafter":
    return textenv.crafter_instances("evaluation", 2)
  return textenv.procgen_instances(env, "evaluation", 2)


def jobs(env: str) -> list[EpisodeJob]:
  """Two rollouts of each instance with the ConPAct-I agents (planner and actor)."""
  make_agent = functools.partial(methods.make_agent, "conpact_i", textenv.task(env),
                                 max_subgoal_steps=3)
  return [EpisodeJob({"instance": i.instance_id, "rollout": r}, make_env=i.make_env,
                     make_agent=make_agent, env_seed=i.env_seed)
          for i in instances(env) for r in range(2)]


def play(path, env: str, specs, executor) -> list[dict]:
  """The rows of one host-loop run, without timings, in episode order."""
  policy = ConPActScriptedPolicy(env, NoiseModel({"perception": 0.4, "recheck_miss": 0.1}))
  loop = HostLoop(ScriptedBackend(policy, seed=0), action_budget=BUDGET, call_budget=BUDGET,
                  max_live=WORKERS, show_progress=False, executor=executor)
  with ResultsLog(str(path), key=("instance", "rollout")) as log:
    loop.run(specs, log)
    return sorted(comparable(log.rows()), key=lambda r: (r["instance"], r["rollout"]))


@pytest.mark.parametrize("env", ["sokoban", "minigrid", "crafter", "procgen-maze"])
def test_every_executor_writes_the_inline_rows(env, tmp_path):
  if env.startswith("procgen-") and importlib.util.find_spec("procgen") is None:
    pytest.skip("procgen is an optional dependency (README: procgen2)")
  specs = jobs(env)
  inline = play(tmp_path / "inline", env, specs, InlineExecutor)
  procs = play(tmp_path / "processes", env, specs, lambda: ProcessExecutor(workers=WORKERS))
  actors = play(tmp_path / "ray", env, specs, lambda: RayExecutor(workers=WORKERS))
  assert procs == inline and actors == inline
  assert len(inline) == 4 and all(r["actions"] > 0 and r["status"] != "env_error"
                                  for r in inline)
  # Every step's rendered state is in the rows, so equal rows mean equal env states.
  assert all(e["obs"] for r in inline for e in r["transcript"] if e["type"] == "action")
