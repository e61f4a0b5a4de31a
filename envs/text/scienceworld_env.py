"""ScienceWorld (Wang et al., 2022) behind the host-loop text-env interface, with a supervised JVM.

The `scienceworld` package (pip `scienceworld>=1.2,<1.3`) runs the Scala simulator in a local
JVM (Java 11+) reached over py4j; nothing is downloaded. One `ScienceWorld` object owns one JVM
and plays one episode at a time; `reset(seed)` picks the level `levels[seed % len(levels)]`.

Supervision: every simulator call runs on a worker thread with a timeout. A call that raises a
py4j/connection error (the JVM died) or does not return in time (the JVM hung) kills the JVM,
ends the episode with `info["env_error"]` = `env_died` / `env_hang` (`terminated=True`,
`success=False`) and the next `reset` starts a fresh JVM. A failed JVM start is retried
`start_retries` times, then raises (a machine without Java is a setup error, not an episode).

Steps go straight to the simulator's `PythonInterface` (`step`, `getScore`, `getCompleted`) rather
than through `scienceworld.ScienceWorldEnv.step`, which also computes the full valid-action list on
every step (~0.6 s); the list is fetched only with `list_actions=True`. Score is 0..100 as in the
package; reward is the score change / 100; success is `completed and score >= 100` (a negative
score also completes the episode, as a failure). Listed objects come in sorted order
(`canonical_listing`): the simulator's own order depends on the JVM's history.
"""
import concurrent.futures
import json
import logging
import os
import re
import signal
from typing import Sequence

from envs.text.base import ENV_DIED, ENV_EXCEPTION, ENV_HANG, EpisodeSpec, error_info

ENV_NAME = "scienceworld"
# The 30 tasks of the benchmark, by the names the simulator loads them with.
TASK_NAMES = (
    "boil", "change-the-state-of-matter-of", "chemistry-mix", "chemistry-mix-paint-secondary-color",
    "chemistry-mix-paint-tertiary-color", "find-animal", "find-living-thing",
    "find-non-living-thing", "find-plant", "freeze", "grow-fruit", "grow-plant",
    "identify-life-stages-1", "identify-life-stages-2", "inclined-plane-determine-angle",
    "inclined-plane-friction-named-surfaces", "inclined-plane-friction-unnamed-surfaces",
    "lifespan-longest-lived", "lifespan-longest-lived-then-shortest-lived",
    "lifespan-shortest-lived", "measure-melting-point-known-substance",
    "measure-melting-point-unknown-substance", "melt", "mendelian-genetics-known-plant",
    "mendelian-genetics-unknown-plant", "power-component",
    "power-component-renewable-vs-nonrenewable-energy", "test-conductivity",
    "test-conductivity-of-unknown-substances", "use-thermometer")

# Refusals the simulator prints when it parses nothing (grammar) or the action's precondition does
# not hold. Matched only against short one-line observations: room descriptions can contain
# "is not" without any action failing. Collected from the simulator's messages; a heuristic.
_FAILURE_PATTERNS = re.compile(
    r"no known action matches|^ambiguous request|not sure (?:what|how)|not clear how|can't|"
    r"cannot|does not|doesn't|^the .+ is not |is not moveable|already|^nothing|"
    r"not in (?:a |the )?(?:container|inventory)|criteria not met", re.IGNORECASE)


def failed_action(observation: str) -> bool:
  """True when the observation is one of the simulator's grammar or precondition refusals, or
  its question back on an ambiguous action (which executes nothing until it is answered)."""
  text = observation.strip()
  if text.lower().startswith("ambiguous request"):
    return True
  return bool(text) and "\n" not in text and len(text) < 160 and bool(
      _FAILURE_PATTERNS.search(text))


def canonical_listing(observation: str) -> str:
  """`observation` with each run of consecutive tab-indented lines (the objects a room or
  container lists, one per line) sorted.

  The simulator keeps a room's objects in a hash set and lists them in its iteration order,
  which depends on the JVM's history: the same level, loaded after different levels, lists the
  same lines in another order (allenai/ScienceWorld#15 sorted some listings, not these). Sorting
  makes an observation a function of the state alone, so an episode gives the same rows whichever
  JVM (inline, worker process, Ray actor) plays it. The lines themselves are not touched, nor is
  a run that holds deeper-indented lines (their parent line would lose them)."""
  lines = observation.split("\n")
  out, run = [], []
  for line in lines + [None]:
    if line is not None and line.startswith("\t"):
      run.append(line)
      continue
    nested = any(x.startswith("\t\t") for x in run)   # sub-items belong under their line
    out += run if nested else sorted(run)
    run = []
    if line is not None:
      out.append(line)
  return "\n".join(out)


def task_catalog() -> list[dict]:
  """The 30 ScienceWorld tasks from the package's own table: id, topic, task name, title."""
  from scienceworld import constants  # the package ships tasks.json next to the jar
  with open(constants.TASK_PATH) as f:
    rows = json.load(f)
  return [{"task_id": r["task_id"], "topic": r["topic"], "task": r["task_name"],
           "title": r["task"]} for r in rows]


def _quiet_py4j():
  # A dead JVM makes py4j log a traceback per reconnect attempt; our code reports the error once.
  logging.getLogger("py4j").setLevel(logging.CRITICAL)


class ScienceWorld:
  """One ScienceWorld simulator (one JVM) playing the given levels.

  Args:
    levels: (task name, variation) pairs; `reset(seed)` plays `levels[seed % len(levels)]`.
    max_steps: actions per episode before `truncated=True` (the audit uses 30).
    list_actions: put the simulator's valid action-object combinations into
      `info["admissible_actions"]` (slow, ~0.6 s per step; the audit's ScienceWorld runs are
      no-list).
    gold: generate the gold action sequence on load (`gold_actions()`); slower loads.
    simplifications: the package's simplification string ("" = full task).
    call_timeout_s: a simulator call longer than this counts as a hung JVM (task loads use
      `load_timeout_s`, generating a gold path can take tens of seconds).
  """

  def __init__(self, levels: Sequence[tuple[str, int]], max_steps: int = 30,
               list_actions: bool = False, gold: bool = False, simplifications: str = "",
               call_timeout_s: float = 30.0, load_timeout_s: float = 300.0,
               start_retries: int = 2):
    if not levels:
      raise ValueError("ScienceWorld needs at least one (task, variation) level")
    if max_steps < 1:
      raise ValueError(f"max_steps must be >= 1, got {max_steps}")
    self.levels = [(str(t), int(v)) for t, v in levels]
    self.max_steps, self.list_actions, self.gold = max_steps, list_actions, gold
    self.simplifications = simplifications
    self.call_timeout_s, self.load_timeout_s = call_timeout_s, load_timeout_s
    self.start_retries = start_retries
    self._sw = None            # scienceworld.ScienceWorldEnv (owns the JVM)
    self._pool = None          # single worker thread for timed simulator calls
    self._loaded = None        # (task, variation) currently loaded in the JVM
    self.restarts = 0          # JVM (re)starts after the first, for logs and tests
    self._gold_cache: dict[tuple[str, int], list[str]] = {}  # gold paths are fixed per level
    self._starts = 0
    self.spec: EpisodeSpec | None = None
    _quiet_py4j()

  # ---- JVM lifecycle ----------------------------------------------------------------------

  @property
  def jvm_pid(self) -> int | None:
    """Process id of the live JVM (None before the first reset or after a failure)."""
    if self._sw is None:
      return None
    return self._sw._gateway.java_process.pid  # pylint: disable=protected-access

  def _start(self) -> None:
    from scienceworld import ScienceWorldEnv  # imported lazily: starting Java is slow
    last = None
    for _ in range(self.start_retries + 1):
      try:
        self._sw = ScienceWorldEnv("", envStepLimit=10**6)  # we truncate ourselves
        self._pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="sciworld")
        self.restarts += self._starts > 0
        self._starts += 1
        self._loaded = None
        return
      except Exception as e:  # pylint: disable=broad-except
        last = e
        self._kill()
    raise RuntimeError(f"could not start the ScienceWorld JVM (is Java 11+ installed?): {last!r}")

  def _kill(self) -> None:
    """Ends the JVM without talking to it (it may be dead or stopped)."""
    sw, pool = self._sw, self._pool
    self._sw, self._pool, self._loaded = None, None, None
    # The JVM dies first: cancelling the pool's queued calls drops their py4j objects, whose
    # finalizers ask the JVM to free them over the socket. A stopped (hung) JVM never answers,
    # so that request blocked the run forever; a killed one refuses it at once.
    if sw is not None:
      proc = sw._gateway.java_process  # pylint: disable=protected-access
      try:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
      except (OSError, ProcessLookupError, Exception):  # pylint: disable=broad-except
        pass
    if pool is not None:
      pool.shutdown(wait=False, cancel_futures=True)
    if sw is None:
      return
    try:
      sw._gateway.shutdown()  # pylint: disable=protected-access
    except Exception:  # pylint: disable=broad-except
      pass
    sw.close = lambda: None  # its __del__ would try to talk to the dead JVM

  def close(self) -> None:
    self._kill()

  def __del__(self):
    try:
      self._kill()
    except Exception:  # pylint: disable=broad-except
      pass

  def _call(self, fn, *args, timeout: float | None = None):
    """Runs `fn(*args)` on the worker thread; raises _SimulatorFailure(code) on death or hang."""
    future = self._pool.submit(fn, *args)
    try:
      return future.result(timeout=timeout or self.call_timeout_s)
    except concurrent.futures.TimeoutError as e:
      raise _SimulatorFailure(ENV_HANG, f"no reply within {timeout or self.call_timeout_s}s") from e
    except Exception as e:  # pylint: disable=broad-except
      code = ENV_DIED if _is_connection_error(e) or self._jvm_exited() else ENV_EXCEPTION
      raise _SimulatorFailure(code, f"{type(e).__name__}: {e}") from e

  def _jvm_exited(self, grace_s: float = 2.0) -> bool:
    """Whether the JVM is gone; a killed JVM can fail a call a moment before it is reaped."""
    proc = self._sw._gateway.java_process  # pylint: disable=protected-access
    try:
      proc.wait(timeout=grace_s)
      return True
    except Exception:  # pylint: disable=broad-except
      return False

  # ---- episodes ---------------------------------------------------------------------------

  def reset(self, seed: int) -> tuple[str, dict]:
    task, variation = self.levels[int(seed) % len(self.levels)]
    self.spec = EpisodeSpec(ENV_NAME, task, variation)
    self._steps, self._score, self._done = 0, 0, False
    self._gold = []
    for attempt in range(2):  # a JVM that fails during reset is restarted once
      if self._sw is None:
        self._start()
      try:
        return self._reset_loaded(task, variation)
      except _SimulatorFailure as failure:
        self._kill()
        if attempt == 1:
          raise RuntimeError(f"ScienceWorld reset failed twice: {failure.code} "
                             f"{failure.detail}") from failure
    raise AssertionError("unreachable")

  def _reset_loaded(self, task: str, variation: int) -> tuple[str, dict]:
    sw = self._sw
    level = (task, variation)
    need_gold = self.gold and level not in self._gold_cache
    if self._loaded != level or need_gold:
      self._call(sw.load, task, variation, self.simplifications, need_gold,
                 timeout=self.load_timeout_s)
      self._loaded = level
      if need_gold:
        self._gold_cache[level] = list(self._call(sw.server.getGoldActionSequence))
    else:
      self._call(sw.server.reset)  # same level again: rewind instead of reloading
    self._gold = self._gold_cache.get(level, [])
    obs = canonical_listing(self._call(sw.server.step, "look around"))
    self.task = self._call(sw.server.getTaskDescription).strip()
    return obs, self._info(obs, action_failed=False)

  # ---- level enumeration ------------------------------------------------------------------

  def task_names(self) -> list[str]:
    """The task names the running simulator knows."""
    if self._sw is None:
      self._start()
    return [str(t) for t in self._call(self._sw.server.getTaskNames)]

  def max_variations(self, task: str) -> int:
    """Number of variations of `task` (no load needed)."""
    if self._sw is None:
      self._start()
    return int(self._call(self._sw.server.getTaskMaxVariations, task))

  def variations(self, task: str, split: str) -> list[int]:
    """The package's train/dev/test variation indices of `task` (loads the task)."""
    getters = {"train": "getVariationsTrain", "dev": "getVariationsDev", "test": "getVariationsTest"}
    if split not in getters:
      raise ValueError(f"unknown split {split!r}; valid: {sorted(getters)}")
    if self._sw is None:
      self._start()
    self._call(self._sw.load, task, 0, self.simplifications, False, timeout=self.load_timeout_s)
    self._loaded = None  # the episode's level is reloaded on the next reset
    return [int(v) for v in self._call(getattr(self._sw.server, getters[split]))]

  def gold_actions(self) -> list[str]:
    """The simulator's gold action sequence for the current level (needs `gold=True`)."""
    if not self.gold:
      raise ValueError("construct ScienceWorld(..., gold=True) to get gold action sequences")
    return list(self._gold)

  def _info(self, obs: str, action_failed: bool) -> dict:
    info = {"task": self.task, "score": float(self._score), "success": self._score >= 100
            and self._done, "action_failed": action_failed, "env_error": None,
            "steps": self._steps, "task_id": self.spec.task_id}
    if self.list_actions:
      info["admissible_actions"] = sorted(
          self._call(self._sw.server.getValidActionObjectCombinations))
    return info

  def step(self, action: str) -> tuple[str, float, bool, bool, dict]:
    if self.spec is None:
      raise RuntimeError("call reset() before step()")
    if self._done or self._sw is None:
      raise RuntimeError("episode is over; call reset()")
    self._steps += 1
    server = self._sw.server
    try:
      obs = canonical_listing(self._call(server.step, str(action)))
      score = int(round(100 * self._call(server.getScore)))
      completed = bool(self._call(server.getCompleted)) or score < 0
      reward = (score - self._score) / 100.0
      self._score, self._done = score, completed
      info = self._info(obs, action_failed=failed_action(obs))
    except _SimulatorFailure as failure:
      self._kill()
      self._done = True
      base = {"task": getattr(self, "task", ""), "score": float(self._score),
              "steps": self._steps, "task_id": self.spec.task_id}
      return "", 0.0, True, False, error_info(base, failure.code, failure.detail)
    truncated = not completed and self._steps >= self.max_steps
    self._done = self._done or truncated
    return obs, reward, completed, truncated, info


class _SimulatorFailure(Exception):

  def __init__(self, code: str, detail: str):
    super().__init__(f"{code}: {detail}")
    self.code, self.detail = code, detail


def _is_connection_error(e: BaseException) -> bool:
  from py4j.protocol import Py4JNetworkError  # comes with scienceworld (the optional `envs` extra)
  return isinstance(e, (Py4JNetworkError, ConnectionError, EOFError))


def make(task: str = "find-non-living-thing", variations: Sequence[int] = (0,), **kwargs
         ) -> ScienceWorld:
  """Registry factory: one task over the given variations."""
  return ScienceWorld([(task, v) for v in variations], **kwargs)
