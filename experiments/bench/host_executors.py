"""Benchmark: episodes/s of the host loop under each env executor, against `inline` in the same run.

Sections (configs/bench/host_executors.py): `latency`, an env that only sleeps per step
(envs/toy/latency_env.py: no CPU, so workers can scale past the core count), and the text games
`textworld` / `scienceworld` as the world-model audit plays them (its agent, its scripted stand-in
model). Every section plays the same episodes under each of its executors ("inline",
"processes:N", "ray:N") with the same fixed scripted backend, so the rows must agree (timings
aside), which the run checks.

Each executor of a section is built once and kept across its rounds (HostLoop.run would close it):
the rounds time steady-state episodes, not worker start-up, and a worker reuses its text-game env
across the episodes it serves (envs/text/pool.py:PooledEnvFactory), as in the audit's evaluation.
One untimed run per executor first (the warm-up: it spawns the workers and builds their envs; its
seconds are reported as `warmup_s`), then `rounds` interleaved timed rounds (lib/bench/rounds.py:
inline, processes:1, ..., inline, ...; every call plays the episodes into a fresh results file).

Reported per (env, executor, workers): the median episodes/s with its min-max over rounds, env
steps/s, the ratio to `inline` (medians) with its range over the per-round ratios, the scaling
efficiency (ratio / workers; inline counts as one worker), the rate per worker (the number
docs/scaling.md projects cluster throughput from), and whether the rows equal inline's. The
summary records the load average before and after, the cores and the threads; on a run whose load
exceeded one per core the headline ratios are null, as in every benchmark.
"""
import functools
import itertools
import os
import time
import uuid

import ml_collections
from absl import logging

from agents.wm.agent import WorldModelAuditAgent
from agents.wm.scripted import ScriptedAuditModel
from envs.text.pool import PooledEnvFactory, close_process_pools
from envs.text.sources import text_env_sources
from envs.toy.guess_env import parse_guess
from envs.toy.latency_env import EchoPolicy, LatencyEnv
from lib.backends.factory import make_backend
from lib.backends.protocol import SamplingParams
from lib.bench.rounds import Rounds
from lib.hostloop.executor_factory import make_executor
from lib.hostloop.loop import EpisodeJob, HostLoop
from lib.hostloop.prompt_agent import PromptAgent
from lib.run import tb
from lib.run.config_blocks import host_block
from lib.run.results import ResultsLog, write_summary

SECTIONS = ("latency", "textworld", "scienceworld")
KEY = ("level", "sample")
BASELINE = "inline"
TIMING_FIELDS = ("wall_s", "model_latency_s")   # row fields that differ between runs


class KeptOpenExecutor:
  """Forwards to an executor but ignores `close`, so one executor serves every round of a
  section (HostLoop.run closes the executor it made); `close_for_real` ends it.

  Args:
    executor: a built env executor (lib/hostloop/executors.py).
  """

  def __init__(self, executor):
    self.executor = executor
    self.capacity = executor.capacity

  def run(self, calls):
    return self.executor.run(calls)

  def release(self, episode: int) -> None:
    self.executor.release(episode)

  def close(self) -> None:
    """Kept open: the next round reuses the workers and their envs."""

  def close_for_real(self) -> None:
    """Ends the executor's workers (at the end of the section)."""
    self.executor.close()


def parse_executor(name: str) -> tuple[str, int]:
  """("inline", 1) or (kind, workers) of an executor name "inline" / "processes:N" / "ray:N".

  Args:
    name: the executor as a section of the config lists it.
  Returns:
    (kind, workers); inline counts as one worker (the loop's own process steps the envs).
  Raises:
    ValueError: an unknown kind, or a worker executor without a positive worker count.
  """
  kind, _, workers = name.partition(":")
  if kind == BASELINE and not workers:
    return kind, 1
  if kind not in ("processes", "ray") or not workers.isdigit() or int(workers) < 1:
    raise ValueError(f"executor {name!r}: use 'inline', 'processes:N' or 'ray:N' (N >= 1)")
  return kind, int(workers)


def timing_free(row: dict) -> dict:
  """A results row without what depends on the clock (wall and model latency, call latencies)."""
  out = {k: v for k, v in row.items() if k not in TIMING_FIELDS}
  out["transcript"] = [{k: v for k, v in e.items() if k != "latency_s"}
                       for e in row["transcript"]]
  return out


def _latency_section(config):
  """(jobs, scripted policy, action budget, pool keys) of the sleep-latency section; a LatencyEnv
  is cheap to build, so every episode gets a fresh one (no pool)."""
  lc = config.latency
  make_env = functools.partial(LatencyEnv, lc.step_latency_s, lc.episode_steps)
  make_agent = lambda: PromptAgent("Reply with one integer.", render=lambda o: o,
                                   parse=parse_guess, fallback_action=0)
  jobs = [EpisodeJob({"level": i, "sample": 0}, make_env=make_env, make_agent=make_agent,
                     env_seed=i) for i in range(lc.episodes)]
  return jobs, EchoPolicy(), lc.episode_steps, []


def _text_section(config, workdir: str, name: str, run_id: str):
  """(jobs, scripted policy, action budget, pool keys) of a text-game section."""
  sc = config[name]
  blocks = {"scienceworld": dict(enabled=False), "textworld": dict(enabled=False),
            "alfworld": dict(enabled=False)}
  blocks[name] = sc.to_dict()
  sources = text_env_sources(ml_collections.ConfigDict(blocks), workdir, sc.max_steps,
                             gold=False)
  make_split, levels = sources[name]
  # One pool per process that plays these episodes: this one (inline) and each worker.
  make_env = PooledEnvFactory(f"bench-host-executors/{run_id}/{name}",
                              functools.partial(make_split, "eval"))
  make_agent = lambda: WorldModelAuditAgent(name, sc.regime,
                                            history_window=config.history_window)
  jobs = [EpisodeJob({"level": level, "sample": sample}, make_env=make_env,
                     make_agent=make_agent, env_seed=level)
          for level in range(len(levels["eval"])) for sample in range(sc.samples)]
  return jobs, ScriptedAuditModel(config.backend.p_garble), sc.max_steps, [make_env.key]


def _ray_cpus_per_actor(config, section_executors, wanted: float) -> float:
  """The CPUs each Ray actor of a section reserves: `wanted`, lowered so that every actor of
  the section fits the Ray cluster at once (the sides' actors stay up between their turns; an
  actor that cannot be placed would wait forever). A reservation is bookkeeping, not pinning."""
  from lib.hostloop import ray_executor  # pylint: disable=g-import-not-at-top  (optional: ray)
  ray_executor.start_ray(config.ray_address)
  actors = sum(n for kind, n in map(parse_executor, section_executors) if kind == "ray")
  cpus = float(ray_executor.ray.cluster_resources().get("CPU", 1.0))
  return min(float(wanted), cpus / max(actors, 1))


def _executor(config, name: str, ray_cpus: float):
  kind, workers = parse_executor(name)
  if kind == BASELINE:
    return KeptOpenExecutor(make_executor(host_block()))
  return KeptOpenExecutor(make_executor(host_block(
      executor=kind, workers=workers, ray_address=config.ray_address, ray_num_cpus=ray_cpus)))


def _play(backend, config, jobs, budget, max_live, executor, path):
  """Plays `jobs` into a fresh results file; (rows sorted by key, env steps, backend calls)."""
  loop = HostLoop(backend, action_budget=budget, call_budget=budget, max_live=max_live,
                  default_params=SamplingParams(max_tokens=config.max_tokens,
                                                temperature=config.temperature),
                  seed=config.seed, show_progress=False, executor=lambda: executor)
  with ResultsLog(path, key=KEY) as log:
    out = loop.run(jobs, log)
    rows = sorted(log.rows(), key=lambda r: (r["level"], r["sample"]))
  return rows, sum(r["actions"] for r in rows), out["steps"]


def _section(config, workdir: str, name: str, timer: Rounds) -> list[dict]:
  """Warm-up and timed rounds of one section; its table rows."""
  if name == "latency":
    jobs, policy, budget, pool_keys = _latency_section(config)
  else:   # the run's own pool key: a later run in this process must not lease these envs
    jobs, policy, budget, pool_keys = _text_section(config, workdir, name, uuid.uuid4().hex)
  sc = config[name]
  names = list(sc.executors)
  if BASELINE not in names:
    raise ValueError(f"{name}.executors must include the baseline {BASELINE!r}, got {names}")
  backend = make_backend({"kind": "scripted", "seed": config.backend.seed}, policy=policy)
  ray_cpus, t0 = None, time.perf_counter()
  if any(parse_executor(n)[0] == "ray" for n in names):
    ray_cpus = _ray_cpus_per_actor(config, names, sc.ray_num_cpus)
  ray_start_s = time.perf_counter() - t0   # starting (or joining) Ray: the first section only
  executors, last, warmup_s = {}, {}, {}
  counter = itertools.count()

  def side(ex_name):
    def call():   # a fresh results file per call: a resumed log would skip every episode
      path = os.path.join(workdir, name, f"{ex_name.replace(':', '_')}_{next(counter)}")
      last[ex_name] = _play(backend, config, jobs, budget, sc.max_live, executors[ex_name], path)
    return call

  try:
    for ex_name in names:   # build and warm up one executor after the other (untimed)
      t0 = time.perf_counter()
      executors[ex_name] = _executor(config, ex_name, ray_cpus)
      side(ex_name)()
      warmup_s[ex_name] = time.perf_counter() - t0
    t = timer.time({n: side(n) for n in names}, work=len(jobs))
  finally:
    for ex in executors.values():
      ex.close_for_real()
    close_process_pools(pool_keys)
    backend.close()
  base_rows = [timing_free(r) for r in last[BASELINE][0]]
  table = []
  for ex_name in names:
    kind, workers = parse_executor(ex_name)
    rows, env_steps, calls = last[ex_name]
    cmp = Rounds.compare(t[ex_name], t[BASELINE])
    per_s = t[ex_name]["per_s"]
    steps_per_s = env_steps / t[ex_name]["seconds"]["median"]
    table.append({
        "env": name, "executor": kind, "workers": workers, "episodes": len(rows),
        "env_steps": env_steps, "backend_calls": calls,
        "episodes_per_s": per_s["median"], "episodes_per_s_min": per_s["min"],
        "episodes_per_s_max": per_s["max"], "env_steps_per_s": steps_per_s,
        "ratio": cmp["ratio"], "ratio_min": cmp["ratio_min"], "ratio_max": cmp["ratio_max"],
        "efficiency": cmp["ratio"] / workers,
        "episodes_per_s_per_worker": per_s["median"] / workers,
        "warmup_s": warmup_s[ex_name],
        "ray_num_cpus": ray_cpus if kind == "ray" else None,
        "ray_start_s": ray_start_s if kind == "ray" else None,
        "same_rows_as_inline": [timing_free(r) for r in rows] == base_rows})
  return table


def run(config, workdir):
  """Runs every section of `config.sections` (see the module doc) into `workdir`."""
  if config.backend.kind != "scripted":   # a model's time would hide the executors' differences
    raise ValueError(f"backend.kind must be 'scripted' (a fixed scripted backend), got "
                     f"{config.backend.kind!r}")
  unknown = set(config.sections) - set(SECTIONS)
  if unknown:
    raise ValueError(f"unknown sections {sorted(unknown)}; valid: {', '.join(SECTIONS)}")
  load_before = list(os.getloadavg())
  # each executor's untimed first run is its warm-up; 32 workers on 2 cores load the machine
  # by design, so the load before the rounds says whether it was quiet
  timer = Rounds(config.rounds, warmup=0, own_load=True)
  ray = None
  if any(parse_executor(e)[0] == "ray" for n in config.sections for e in config[n].executors):
    import ray  # pylint: disable=g-import-not-at-top  (optional: only the Ray sides need it)
  ray_was_up = ray is not None and ray.is_initialized()
  table = []
  try:
    for name in config.sections:
      table += _section(config, workdir, name, timer)
  finally:   # a Ray this run started goes with it; one it joined stays up
    if ray is not None and not ray_was_up and ray.is_initialized():
      ray.shutdown()
  load_after = list(os.getloadavg())
  machine = timer.machine()
  writer = tb.writer(workdir)
  for i, r in enumerate(table):
    writer.add_scalar(f"host_executors/{r['env']}/{r['executor']}_{r['workers']}/ratio",
                      r["ratio"], i)
  label = lambda r: f"{r['env']}/{r['executor']}" + (
      f":{r['workers']}" if r["executor"] != BASELINE else "")
  same = all(r["same_rows_as_inline"] for r in table)
  summary = {
      "speedup_vs_inline": {label(r): timer.headline(r["ratio"]) for r in table},
      "efficiency": {label(r): timer.headline(r["efficiency"]) for r in table},
      "baseline": BASELINE, "same_rows_as_inline": same, "backend": "scripted",
      "sections": list(config.sections), "loadavg_before": load_before,
      "loadavg_after": load_after, "cpu_count": os.cpu_count(), "noisy": machine["noisy"],
      "machine": machine,
      "episodes_per_s_counts": "finished episodes (results rows) per wall second of one "
                               "HostLoop.run; ratio = median / inline's median in this run; "
                               "efficiency = ratio / workers (inline = 1 worker)"}
  lines = [f"{label(r)}: {r['episodes_per_s']:.2f} ep/s [{r['episodes_per_s_min']:.2f}-"
           f"{r['episodes_per_s_max']:.2f}], {r['ratio']:.2f}x inline "
           f"[{r['ratio_min']:.2f}-{r['ratio_max']:.2f}], efficiency {r['efficiency']:.2f}"
           for r in table]
  head = (f"load {load_before[0]:.1f} -> {load_after[0]:.1f} on {os.cpu_count()} cores; "
          f"same rows as inline: {same}")
  msg = f"[host_executors] {head}\n  " + "\n  ".join(lines) + "\n" + timer.note()
  print(msg, flush=True)
  logging.info(msg)
  notes = (f"{head}. Scripted backend (mechanics, not a model result). Each executor is built "
           "once per section and warmed up by one untimed run (`warmup_s`: worker start-up and "
           "env builds); the rounds reuse its workers and their envs.\n\n"
           + "".join(f"- {line}\n" for line in lines) + "\n" + timer.note())
  write_summary(workdir, summary, table, title="Host loop env executors: episodes/s vs inline",
                notes=notes, key=("env", "executor", "workers"))
  if not same:
    raise RuntimeError("an executor's rows differ from inline's (timings aside): "
                       + ", ".join(label(r) for r in table if not r["same_rows_as_inline"]))
  return summary
