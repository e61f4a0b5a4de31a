"""The host loop: many episodes at once, one batched backend call per step.

Every step, each live episode is advanced until it either ends or asks for a model reply; all the
pending requests are then answered by ONE `backend.generate` call (so the number of backend calls
equals the number of steps, not episodes x steps), and each reply is handed back to its agent.
Actions need no model and are applied immediately, inside the advance.

An episode ends with a status:
  success        `success_fn(reward, terminated, info)`; by default `info["success"]` when the env
                 reports it, else terminated with reward > 0
  failure        terminated without success            truncated     the env's own time limit
  action_budget  A actions taken without ending        call_budget   the agent wanted call C+1
  backend_error  a model call failed (after the backend's own retries); `error` holds its code
  agent_error    the agent (or the env it drove) raised; `error_detail` holds the exception
  env_error      the env's worker hung past its timeout or died (`host.executor` processes /
                 ray); `error` is env_timeout / env_worker_died, `error_detail` says which worker
Envs run where the loop's executor puts them (lib/hostloop/executors.py: in this process, or one per
worker process or Ray actor): between two model calls the pending reset/step calls of all live
episodes go to the executor together, so envs in workers step concurrently.
Each finished episode is appended at once to `results.jsonl` (flushed + fsync'd) with its full
transcript, so a crash or kill loses no finished rows. A rerun skips keys already present; when the
log's key includes "attempt", episodes whose every row is a `backend_error` are run again with the
next attempt number (up to `max_attempts`), and `final_rows` picks the last row per episode.
"""
import dataclasses
import hashlib
import json
import time
from typing import Any, Callable, Sequence

import numpy as np
from absl import logging

from lib.backends.protocol import Backend, SamplingParams
from lib.hostloop.agent import Act, ModelRequest, scalar_info
from lib.hostloop.executors import EnvCall, EnvExecutor, EnvResult, InlineExecutor, exception_record
from lib.run.progress import progress
from lib.run.results import ResultsLog

STATUSES = ("success", "failure", "truncated", "action_budget", "call_budget", "backend_error",
            "agent_error", "env_error")
ATTEMPT = "attempt"


@dataclasses.dataclass
class EpisodeJob:
  """One episode for the loop to run (how to build its env and agent, not a level description:
  that is `envs.text.base.EpisodeSpec`). `key` identifies it in results.jsonl (e.g. instance and
  rollout) and must hold exactly the log's key fields (minus "attempt"); `extra` is copied into
  the row."""
  key: dict
  make_env: Callable[[], Any]
  make_agent: Callable[[], Any]
  env_seed: int
  extra: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class _Episode:
  job: EpisodeJob
  attempt: int
  uid: int = 0
  agent: Any = None
  request: ModelRequest | None = None
  env_call: EnvCall | None = None   # a reset or step waiting for the executor
  act: Act | None = None            # the Act whose step is pending
  actions: int = 0
  calls: int = 0
  ret: float = 0.0
  status: str | None = None
  error: str | None = None
  error_detail: str = ""
  transcript: list = dataclasses.field(default_factory=list)
  started: float = 0.0


def _obs_record(obs) -> dict:
  return {"obs": obs} if isinstance(obs, str) else {}


def default_success(reward: float, terminated: bool, info: dict) -> bool:
  """The default `success_fn`: `info["success"]` when present, else terminated with reward > 0.

  Args:
    reward: the step's reward.
    terminated: whether the env ended the episode (not a time limit).
    info: the step's info dict; "success" may be a bool or a scalar array.
  Returns:
    Whether the episode counts as a success.
  """
  if "success" in info:
    return bool(np.asarray(info["success"]))
  return bool(terminated and reward > 0)


def request_seed(loop_seed: int, key: dict, attempt: int, call_index: int) -> int:
  """A per-request sampling seed fixed by the episode and call index, not by batch company.

  Args:
    loop_seed: the HostLoop's seed.
    key: the episode's key dict (as in results.jsonl).
    attempt: the episode's attempt number.
    call_index: model calls the episode has made so far.
  Returns:
    A 32-bit unsigned seed (blake2b of the four, little-endian).
  """
  blob = json.dumps([loop_seed, key, attempt, call_index], sort_keys=True).encode()
  return int.from_bytes(hashlib.blake2b(blob, digest_size=4).digest(), "little")


class HostLoop:
  """Drives agents in host-loop envs against one backend.

  action_budget A and call_budget C are per episode; `max_live` caps concurrently live episodes
  (None: all at once), `default_params` serves requests without their own params. An episode bar
  (`progress_desc`) is drawn on a terminal only (lib/run/progress.py); `show_progress=False` never.
  `executor` makes the env executor of one `run` (lib/hostloop/executors.py; default inline, e.g.
  `lambda: executor_factory.make_executor(config.host)`); its `capacity` caps the live episodes too,
  and `run` closes it at the end.
  """

  def __init__(self, backend: Backend, *, action_budget: int, call_budget: int,
               default_params: SamplingParams = SamplingParams(), max_live: int | None = None,
               seed: int = 0, max_attempts: int = 3, show_progress: bool = True,
               progress_desc: str = "episodes",
               success_fn: Callable[[float, bool, dict], bool] = default_success,
               executor: Callable[[], EnvExecutor] = InlineExecutor):
    if action_budget < 1 or call_budget < 0:
      raise ValueError(f"need action_budget >= 1 and call_budget >= 0, got "
                       f"{action_budget}, {call_budget}")
    self.backend = backend
    self.action_budget = action_budget
    self.call_budget = call_budget
    self.default_params = default_params
    self.max_live = max_live
    self.seed = seed
    self.max_attempts = max_attempts
    self.show_progress = show_progress
    self.progress_desc = progress_desc
    self.success_fn = success_fn
    self.executor = executor
    self.steps = 0  # batched backend calls made by the last run()

  # ---- resumption -------------------------------------------------------------------------

  def _todo(self, jobs: Sequence[EpisodeJob], log: ResultsLog) -> list[tuple[EpisodeJob, int]]:
    retry = ATTEMPT in log.key
    key_fields = tuple(f for f in log.key if f != ATTEMPT)
    by_key: dict[str, list[dict]] = {}
    for row in log.rows():
      by_key.setdefault(json.dumps([row[f] for f in key_fields], sort_keys=True), []).append(row)
    todo, seen = [], set()
    for job in jobs:
      if set(job.key) != set(key_fields):
        raise KeyError(f"episode key fields {sorted(job.key)} != results key "
                       f"fields {sorted(key_fields)}")
      k = json.dumps([job.key[f] for f in key_fields], sort_keys=True)
      if k in seen:
        raise ValueError(f"duplicate episode key {job.key}")
      seen.add(k)
      rows = by_key.get(k, [])
      if not rows:
        todo.append((job, 0))
      elif retry and all(r["status"] == "backend_error" for r in rows) \
          and len(rows) < self.max_attempts:
        todo.append((job, len(rows)))
    return todo

  # ---- one episode ------------------------------------------------------------------------

  def _start(self, uid: int, job: EpisodeJob, attempt: int) -> _Episode:
    ep = _Episode(job=job, attempt=attempt, uid=uid, started=time.perf_counter())
    ep.env_call = EnvCall(uid, "reset", make_env=job.make_env, seed=job.env_seed)
    return ep

  def _fail(self, ep: _Episode, status: str, exc: BaseException) -> None:
    self._record_failure(ep, status, *exception_record(exc))

  def _record_failure(self, ep: _Episode, status: str, error: str, detail: str) -> None:
    ep.status, ep.error, ep.error_detail = status, error, detail
    logging.warning("episode %s ended with %s: %s", ep.job.key, status, detail)

  def _env_failed(self, ep: _Episode, result: EnvResult) -> bool:
    """Records a raising env as agent_error (as in-process envs always were), a hung or dead
    worker as env_error; True when the episode ended."""
    if result.raised is not None:
      self._record_failure(ep, "agent_error", *result.raised)
    elif result.error is not None:
      self._record_failure(ep, "env_error", result.error, result.detail)
    return ep.status is not None

  def _on_reset(self, ep: _Episode, result: EnvResult) -> None:
    if self._env_failed(ep, result):
      return
    try:
      obs, info = result.value
      ep.agent = ep.job.make_agent()
      ep.transcript.append({"type": "reset", **_obs_record(obs)})
      ep.agent.reset(obs, info)
    except Exception as e:  # pylint: disable=broad-except
      self._fail(ep, "agent_error", e)

  def _drive(self, ep: _Episode) -> None:
    """Runs the agent until it ends, leaves a model request in `ep.request` or an env step in
    `ep.env_call`."""
    while ep.status is None and ep.request is None and ep.env_call is None:
      try:
        nxt = ep.agent.next()
      except Exception as e:  # pylint: disable=broad-except
        self._fail(ep, "agent_error", e)
        return
      if isinstance(nxt, ModelRequest):
        if ep.calls >= self.call_budget:
          ep.status = "call_budget"
          return
        ep.request = nxt
        return
      if not isinstance(nxt, Act):
        self._fail(ep, "agent_error", TypeError(f"agent.next() returned {type(nxt).__name__}"))
        return
      ep.act, ep.env_call = nxt, EnvCall(ep.uid, "step", action=nxt.action)

  def _on_step(self, ep: _Episode, result: EnvResult) -> None:
    if self._env_failed(ep, result):
      return
    try:
      obs, reward, terminated, truncated, info = result.value
      reward, terminated, truncated = float(reward), bool(terminated), bool(truncated)
      ep.actions += 1
      ep.ret += reward
      ep.transcript.append({"type": "action", "tag": ep.act.tag, "action": ep.act.action,
                            "reward": reward, "terminated": terminated,
                            "truncated": truncated, "info": scalar_info(info),
                            **_obs_record(obs)})
      ep.agent.observe(obs, reward, terminated, truncated, info)
    except Exception as e:  # pylint: disable=broad-except
      self._fail(ep, "agent_error", e)
      return
    if self.success_fn(reward, terminated, info):
      ep.status = "success"
    elif terminated:
      ep.status = "failure"
    elif truncated:
      ep.status = "truncated"
    elif ep.actions >= self.action_budget:
      ep.status = "action_budget"

  def _run_env_calls(self, executor: EnvExecutor, live: list[_Episode]) -> None:
    """Hands the pending env calls of every live episode to the executor together, feeds the
    results back and repeats until each episode has ended or waits for the model."""
    while True:
      eps = [ep for ep in live if ep.env_call is not None]
      if not eps:
        return
      results = executor.run([ep.env_call for ep in eps])
      for ep, result in zip(eps, results):
        call, ep.env_call = ep.env_call, None
        (self._on_reset if call.op == "reset" else self._on_step)(ep, result)
        if ep.agent is not None:
          self._drive(ep)

  def _row(self, ep: _Episode, log: ResultsLog) -> dict:
    calls = [e for e in ep.transcript if e["type"] == "call"]
    with_usage = [c for c in calls if c["input_tokens"] is not None
                  and c["output_tokens"] is not None]
    summary = {}
    if ep.agent is not None and hasattr(ep.agent, "summary"):
      try:
        summary = ep.agent.summary()
      except Exception as e:  # pylint: disable=broad-except
        summary = {"summary_error": repr(e)}
    row = {**ep.job.key, **ep.job.extra,
           "env_seed": ep.job.env_seed, "backend": self.backend.name,
           "status": ep.status, "success": ep.status == "success", "return": ep.ret,
           "actions": ep.actions, "calls": ep.calls,
           "failed_calls": sum(c["error"] is not None for c in calls),
           "calls_with_usage": len(with_usage),
           "input_tokens": sum(c["input_tokens"] for c in with_usage),
           "output_tokens": sum(c["output_tokens"] for c in with_usage),
           "model_latency_s": sum(c["latency_s"] for c in calls),
           "wall_s": time.perf_counter() - ep.started,
           "error": ep.error, "error_detail": ep.error_detail,
           "agent": summary, "transcript": ep.transcript}
    if ATTEMPT in log.key:
      row[ATTEMPT] = ep.attempt
    return row

  # ---- the loop ---------------------------------------------------------------------------

  def run(self, jobs: Sequence[EpisodeJob], log: ResultsLog) -> dict:
    """Runs every unfinished episode of `jobs`, appending one row per finished episode to `log`.

    Args:
      jobs: the episodes; each key must hold exactly the log's key fields (minus "attempt").
      log: the results log; keys already in it are skipped (or retried, see the module doc).
    Returns:
      {"episodes": len(jobs), "run": rows written, "skipped", "steps": backend calls,
      "usage": the backend's usage snapshot}.
    """
    todo = self._todo(jobs, log)
    skipped = len(jobs) - len(todo)
    queue = list(reversed(todo))
    live: list[_Episode] = []
    self.steps = 0
    written = 0
    executor, uid = self.executor(), 0
    cap = min(self.max_live or len(todo) or 1, executor.capacity or len(todo) or 1)
    quiet = {} if self.show_progress else {"disable": True}
    bar = progress(total=len(todo), desc=self.progress_desc, unit="episode", **quiet)
    try:
      while queue or live:
        while queue and len(live) < cap:
          live.append(self._start(uid, *queue.pop()))
          uid += 1
        for ep in live:
          if ep.agent is not None:
            self._drive(ep)
        self._run_env_calls(executor, live)
        waiting = [ep for ep in live if ep.status is None]
        if waiting:
          self._answer(waiting)
        for ep in live:
          if ep.status is not None:
            executor.release(ep.uid)
            log.append(self._row(ep, log))
            written += 1
            bar.update(1)
        live = [ep for ep in live if ep.status is None]
    finally:
      executor.close()
      bar.close()
    return {"episodes": len(jobs), "run": written, "skipped": skipped, "steps": self.steps,
            "usage": self.backend.usage.snapshot()}

  def _answer(self, waiting: list[_Episode]) -> None:
    """One batched backend call for every pending request; replies go back to their agents."""
    convs, params = [], []
    for ep in waiting:
      p = ep.request.params or self.default_params
      if p.seed is None:
        p = p.replace(seed=request_seed(self.seed, ep.job.key, ep.attempt, ep.calls))
      convs.append(ep.request.messages)
      params.append(p)
    completions = self.backend.generate(convs, params)
    self.steps += 1
    for ep, p, c in zip(waiting, params, completions):
      ep.calls += 1
      ep.transcript.append({"type": "call", "tag": ep.request.tag, "messages": ep.request.messages,
                            "params": dataclasses.asdict(p), **c.to_json()})
      ep.request = None
      if c.error is not None:
        ep.status, ep.error, ep.error_detail = "backend_error", c.error, c.error_detail
        continue
      try:
        ep.agent.consume(c)
      except Exception as e:  # pylint: disable=broad-except
        self._fail(ep, "agent_error", e)


def final_rows(rows: Sequence[dict], key_fields: Sequence[str]) -> list[dict]:
  """The last row per episode key (drops superseded backend_error attempts).

  Args:
    rows: results rows, possibly several attempts per episode.
    key_fields: the log's key fields; "attempt" among them is ignored for grouping.
  Returns:
    One row per episode key, the one with the highest attempt (later rows win ties).
  """
  fields = [f for f in key_fields if f != ATTEMPT]
  last: dict[str, dict] = {}
  for r in rows:
    k = json.dumps([r[f] for f in fields], sort_keys=True)
    if k not in last or r.get(ATTEMPT, 0) >= last[k].get(ATTEMPT, 0):
      last[k] = r
  return list(last.values())
