"""The env executors on the real text games of the world-model audit (ScienceWorld's JVM,
TextWorld and ALFWorld in isolated game processes): `inline`, `processes` and `ray` write the
same results.jsonl rows, each process reuses its envs through its own pool, and a worker SIGKILLed
mid-episode ends only that episode, as env_error, taking its (stopped) JVM with it."""
import functools
import os
import signal
import time

import pytest

pytest.importorskip("scienceworld")
pytest.importorskip("alfworld")   # brings textworld
ray = pytest.importorskip("ray")

from agents.wm.agent import WorldModelAuditAgent  # noqa: E402
from agents.wm.scripted import ScriptedAuditModel  # noqa: E402
from configs.wm import eval as wm_eval_config  # noqa: E402
from envs.text.pool import PooledEnvFactory, close_process_pools  # noqa: E402
from envs.text.sources import text_env_sources  # noqa: E402
from lib.hostloop.executors import ENV_WORKER_DIED, InlineExecutor, ProcessExecutor  # noqa: E402
from lib.hostloop.loop import EpisodeJob, HostLoop  # noqa: E402
from lib.hostloop.ray_executor import RayExecutor, start_ray  # noqa: E402
from lib.backends.scripted import ScriptedBackend  # noqa: E402
from lib.run.results import ResultsLog  # noqa: E402

from test_env_executor import comparable  # noqa: E402

# ray.init starts Ray's own daemons with subprocess (fork, then exec at once), which JAX's fork
# warning cannot tell from a bare fork of a multithreaded process.
pytestmark = [pytest.mark.long_module(100),   # JVMs in workers; scheduled first: conftest.py
              pytest.mark.filterwarnings(r"ignore:os\.fork\(\) was called:RuntimeWarning")]

REGIME = {"scienceworld": "no-list", "textworld": "list", "alfworld": "list"}
EPISODES, STEPS, WORKERS = 4, 4, 2
EXECUTORS = {"inline": InlineExecutor,
             "processes": lambda: ProcessExecutor(step_timeout_s=60, workers=WORKERS),
             "ray": lambda: RayExecutor(step_timeout_s=60, workers=WORKERS)}


@pytest.fixture(scope="module", autouse=True)
def local_ray():
  start_ray("")   # what host.ray_address="" does
  yield
  ray.shutdown()


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
  """The debug WM evaluation's games: 4 ScienceWorld levels, 2 TextWorld games, 1 ALFWorld."""
  config = wm_eval_config.get_config("debug")
  return text_env_sources(config, str(tmp_path_factory.mktemp("games")), STEPS, gold=False)


def record_build(factory, path: str):
  """`factory()`, after appending this process's id to `path` (one line per env built)."""
  with open(path, "a", encoding="utf-8") as f:
    f.write(f"{os.getpid()}\n")
  return factory()


class PidFileEnv:
  """Forwards reset/step to `env`; each reset writes "<process id> <JVM id>" to
  `<pid_dir>/<seed>.pid`, so the test can kill the process that plays an episode."""

  def __init__(self, env, pid_dir: str):
    self.env, self.pid_dir = env, pid_dir

  def reset(self, seed):
    out = self.env.reset(seed)
    path = os.path.join(self.pid_dir, f"{seed}.pid")
    with open(path + ".tmp", "w", encoding="utf-8") as f:
      f.write(f"{os.getpid()} {self.env.jvm_pid}")
    os.replace(path + ".tmp", path)
    return out

  def step(self, action):
    return self.env.step(action)


def pid_file_env(make, pid_dir: str) -> PidFileEnv:
  """A PidFileEnv over `make("eval")` (a text game source's eval levels)."""
  return PidFileEnv(make("eval"), pid_dir)


def jobs(env: str, make_env) -> list[EpisodeJob]:
  """EPISODES episodes with the audit's agent; episode i resets with seed i (the env plays its
  eval level i modulo their number)."""
  make_agent = functools.partial(WorldModelAuditAgent, env, REGIME[env], history_window=2)
  return [EpisodeJob({"episode": i}, make_env=make_env, make_agent=make_agent, env_seed=i)
          for i in range(EPISODES)]


def play(path, specs, executor, backend=None) -> list[dict]:
  """The rows of one host-loop run (two live episodes, the audit's scripted stand-in)."""
  backend = backend or ScriptedBackend(ScriptedAuditModel(0.3), seed=0)
  loop = HostLoop(backend, action_budget=STEPS, call_budget=STEPS, max_live=WORKERS,
                  show_progress=False, executor=executor)
  with ResultsLog(str(path), key=("episode",)) as log:
    loop.run(specs, log)
    return sorted(log.rows(), key=lambda r: r["episode"])


@pytest.mark.parametrize("env", ["scienceworld", "textworld", "alfworld"])
def test_every_executor_writes_the_inline_rows(env, sources, tmp_path):
  make, _ = sources[env]
  rows, builds = {}, {}
  for kind, executor in EXECUTORS.items():
    log = str(tmp_path / f"{kind}.builds")
    make_env = PooledEnvFactory(f"{env}/{kind}/{tmp_path}", functools.partial(
        record_build, functools.partial(make, "eval"), log))
    try:
      rows[kind] = comparable(play(tmp_path / kind, jobs(env, make_env), executor))
    finally:
      close_process_pools([make_env.key])
    with open(log, encoding="utf-8") as f:
      builds[kind] = f.read().split()
  assert rows["processes"] == rows["inline"] and rows["ray"] == rows["inline"]
  assert all(r["status"] != "env_error" and r["actions"] > 0 for r in rows["inline"])
  # Every process reuses its envs: two live episodes, so two envs play all four, inline as
  # in the workers (one each; a worker that built two would have a second pid line).
  assert len(builds["inline"]) == 2 and set(builds["inline"]) == {str(os.getpid())}
  for kind in ("processes", "ray"):
    assert len(builds[kind]) == 2 and len(set(builds[kind])) == 2, builds


class KillBeforeCall(ScriptedBackend):
  """Before its `at`-th batch, SIGSTOPs the JVM of the episode whose reset seed is `victim` (a
  hung JVM, which its own stdin's end does not stop) and SIGKILLs the process that plays it."""

  def __init__(self, pid_dir: str, victim: int, at: int):
    super().__init__(ScriptedAuditModel(0.3), seed=0)
    self.pid_dir, self.victim, self.at, self.batches = pid_dir, victim, at, 0
    self.worker = self.jvm = None

  def _generate(self, convs, params):
    self.batches += 1
    if self.batches == self.at:
      with open(os.path.join(self.pid_dir, f"{self.victim}.pid"), encoding="utf-8") as f:
        self.worker, self.jvm = (int(p) for p in f.read().split())
      os.kill(self.jvm, signal.SIGSTOP)
      os.kill(self.worker, signal.SIGKILL)
    return super()._generate(convs, params)


def _gone(pid: int, within_s: float = 20.0) -> bool:
  """Whether process `pid` has exited (reaped or a zombie) within `within_s`."""
  end = time.monotonic() + within_s
  while time.monotonic() < end:
    try:
      with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
        if f.read().rsplit(")", 1)[1].split()[0] == "Z":
          return True
    except FileNotFoundError:
      return True
    time.sleep(0.2)
  return False


@pytest.mark.parametrize("kind", ["processes", "ray"])
def test_a_killed_worker_ends_its_scienceworld_episode_and_its_jvm(kind, sources, tmp_path):
  make, _ = sources["scienceworld"]
  clean_env = PooledEnvFactory(f"clean/{tmp_path}", functools.partial(make, "eval"))
  try:
    clean = comparable(play(tmp_path / "inline", jobs("scienceworld", clean_env),
                            InlineExecutor))
  finally:
    close_process_pools([clean_env.key])
  pid_dir = str(tmp_path)
  make_env = PooledEnvFactory(f"killed/{kind}/{tmp_path}",
                              functools.partial(pid_file_env, make, pid_dir))
  backend = KillBeforeCall(pid_dir, victim=1, at=2)   # episode 1 after its first step
  t0 = time.monotonic()
  rows = comparable(play(tmp_path / kind, jobs("scienceworld", make_env), EXECUTORS[kind],
                         backend))
  assert time.monotonic() - t0 < 120   # the dead worker's JVM kept nothing waiting
  assert [r["episode"] for r in rows] == list(range(EPISODES))   # none lost or twice
  killed = rows[1]
  assert (killed["status"], killed["error"], killed["actions"]) == ("env_error",
                                                                    ENV_WORKER_DIED, 1)
  assert "during env step" in killed["error_detail"]
  assert killed["error_detail"].endswith("replaced")
  if kind == "processes":
    assert f"worker process {backend.worker} was killed by SIGKILL" in killed["error_detail"]
  assert [r for r in rows if r["episode"] != 1] == [r for r in clean if r["episode"] != 1]
  # The stopped JVM went with its worker: the worker's process group (processes), Ray's
  # clean-up of a dead worker's children (ray).
  assert _gone(backend.jvm), f"JVM {backend.jvm} of the killed worker still runs"
