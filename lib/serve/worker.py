"""The server's one model thread: a bounded queue of jobs, gathered into batches.

Request threads `submit` a `Job` and wait on it; a full queue is refused at once with 503 and a
Retry-After hint rather than letting requests pile up. The worker waits up to `batch_window_s`
for more jobs (at most `max_batch` rows) and answers all the generation jobs it gathered with one
`engine.generate` call. A job whose client went away (`Job.cancel`) or whose deadline passed is
skipped if still queued and stopped at the next decode chunk if running. `health()` reports the
queue depth, since when the worker is busy and when it last made progress; it is `stuck` when a
batch made no progress for `stuck_after_s`.
"""
import collections
import threading
import time
import uuid

from absl import logging

from lib.serve.admission import RequestError, ServerLimits
from lib.serve.engine import Cancelled, Engine, Generation


class Job:
  """One request's work: kind "generate" (payload: its GenerationRequests, one per prompt; rows:
  their choices), "embed" (payload: (texts, encoding_format)) or "call" (payload: a () -> result
  callable run on the worker thread after the batch's generations, e.g. a weight push, so it
  never overlaps a sampler call; rows 0)."""

  def __init__(self, kind: str, payload, rows: int, timeout_s: float):
    self.kind, self.payload, self.rows = kind, payload, rows
    self.request_id = uuid.uuid4().hex[:16]
    self.deadline = time.monotonic() + timeout_s
    self.done = threading.Event()
    self.result = None
    self.error: Exception | None = None
    self.cancelled = False

  def cancel(self) -> None:
    """Marks the job cancelled; the worker skips or stops it at the next decode chunk."""
    self.cancelled = True

  def should_stop(self) -> bool:
    """Whether the job was cancelled or its deadline has passed."""
    return self.cancelled or time.monotonic() > self.deadline

  def finish(self, result=None, error: Exception | None = None) -> None:
    """Stores the outcome and wakes the waiting request thread.

    Args:
      result: a Generation (generate) or [N, D] embeddings (embed); None on error.
      error: the Exception that failed the job, or None.
    """
    self.result, self.error = result, error
    self.done.set()


class ModelWorker:
  """Runs `engine` on one thread over a bounded queue (see the module docstring)."""

  def __init__(self, engine: Engine, limits: ServerLimits, batch_window_s: float = 0.01):
    self.engine, self.limits, self.batch_window_s = engine, limits, batch_window_s
    self.batches: list[int] = []  # generation jobs per engine.generate call
    self._queue: collections.deque[Job] = collections.deque()
    self._cond = threading.Condition()
    self._stopping = False
    self._running: list[Job] = []
    self.busy_since: float | None = None  # wall-clock start of the running batch
    self.last_progress = time.monotonic()
    self._thread = threading.Thread(target=self._loop, daemon=True, name="model_worker")

  def start(self) -> None:
    """Starts the worker thread."""
    self._thread.start()

  def submit(self, job: Job) -> Job:
    """Queues a job for the worker thread.

    Args:
      job: the Job to run.
    Returns:
      The same job, to wait on (`job.done`).
    Raises:
      RequestError: 503 with Retry-After when the queue is full or the worker is stopping.
    """
    with self._cond:
      if self._stopping:
        raise RequestError(503, "server is shutting down", "server_error", retry_after_s=5)
      if len(self._queue) >= self.limits.max_queue:
        raise RequestError(503, f"queue full ({self.limits.max_queue} waiting requests, the "
                                "max_queue limit); retry later", "server_error",
                           retry_after_s=max(1.0, self.batch_window_s * 10))
      self._queue.append(job)
      self._cond.notify()
    return job

  def health(self) -> dict:
    """queue_depth, running_rows, busy_since (epoch s or None), seconds_since_progress, stuck,
    alive, batches (engine calls) and requests (generation jobs answered in them)."""
    with self._cond:
      depth, running = len(self._queue), sum(j.rows for j in self._running)
    busy = self.busy_since is not None
    since_progress = time.monotonic() - self.last_progress
    return {"queue_depth": depth, "running_rows": running, "busy_since": self.busy_since,
            "seconds_since_progress": round(since_progress, 3) if busy else None,
            "stuck": busy and since_progress > self.limits.stuck_after_s,
            "alive": self._thread.is_alive(), "batches": len(self.batches),
            "requests": sum(self.batches)}

  def stop(self, drain_s: float = 10.0) -> None:
    """Refuses new jobs, fails queued ones with 503, and ends the thread.

    Args:
      drain_s: seconds the running batch gets to finish before it is cancelled at its next
        decode chunk; returns once the thread has ended (or logs that it is stuck).
    """
    with self._cond:
      self._stopping = True
      queued, self._queue = list(self._queue), collections.deque()
      self._cond.notify_all()
    for job in queued:
      job.finish(error=RequestError(503, "server is shutting down", "server_error",
                                    retry_after_s=5))
    if not self._thread.is_alive():  # never started, or already ended
      return
    self._thread.join(timeout=drain_s)
    for job in list(self._running):
      job.cancel()
    self._thread.join(timeout=max(30.0, self.limits.stuck_after_s))
    if self._thread.is_alive():
      logging.error("model worker did not stop (a batch is stuck inside the model)")

  def _progress(self) -> None:
    self.last_progress = time.monotonic()

  def _next_batch(self) -> list[Job]:
    with self._cond:
      while not self._queue and not self._stopping:
        self._cond.wait(timeout=0.5)
      if self._stopping:
        return []
      jobs = [self._queue.popleft()]
    deadline = time.monotonic() + self.batch_window_s
    rows = jobs[0].rows
    with self._cond:
      while rows < self.limits.max_batch and not self._stopping:
        if not self._queue:
          left = deadline - time.monotonic()
          if left <= 0:
            break
          self._cond.wait(timeout=left)
          continue
        if rows + self._queue[0].rows > self.limits.max_batch:
          break  # it waits at the head of the queue for the next batch
        job = self._queue.popleft()
        jobs.append(job)
        rows += job.rows
    return jobs

  def _loop(self) -> None:
    while True:
      jobs = self._next_batch()
      if not jobs:
        return
      live = []
      for job in jobs:
        if job.should_stop():
          job.finish(error=Cancelled("cancelled before it started"))
        else:
          live.append(job)
      self._running = live
      self.busy_since, self.last_progress = time.time(), time.monotonic()
      try:
        self._run(live)
      except Exception as e:  # pylint: disable=broad-except
        logging.exception("model worker: batch failed outside the engine")
        for job in live:
          if not job.done.is_set():
            job.finish(error=e)
      finally:
        self._running, self.busy_since = [], None

  def _run(self, jobs: list[Job]) -> None:
    gen = [j for j in jobs if j.kind == "generate"]
    if gen:
      owner = [k for k, j in enumerate(gen) for _ in j.payload]
      results = self.engine.generate([r for j in gen for r in j.payload],
                                      lambda: [gen[k].should_stop() for k in owner],
                                      self._progress)
      self.batches.append(len(gen))
      for k, job in enumerate(gen):
        mine = [res for res, o in zip(results, owner) if o == k]
        error = next((res for res in mine if isinstance(res, Exception)), None)
        if error is not None:
          job.finish(error=error)
        else:
          job.finish(result=Generation.merge(mine))
    for job in jobs:
      if job.kind in ("embed", "call"):
        try:
          job.finish(result=self.engine.embed(job.payload[0]) if job.kind == "embed"
                     else job.payload())
        except Exception as e:  # pylint: disable=broad-except
          job.finish(error=e)
      self._progress()
