"""Interleaved A/B timing rounds and the machine state every benchmark reports beside its ratios.

One `Rounds` per benchmark run. `Rounds.time(sides, work)` calls every side once per round in a
fixed order (ours, peer, ours, peer, ...), after `warmup` untimed interleaved calls each, so a burst
of load from other processes hits every side alike; each side's rate is `work / seconds` per round,
reported as the median with its spread (interquartile range and min-max). `compare` gives the ratio
of the two median rates and its range over the per-round ratios (round i of ours / round i of the
peer). The 1-minute load average is sampled before the first round and after every round; when it
exceeded one per core (`os.cpu_count()`) at any sample the run is `noisy` and `headline` returns
None instead of a ratio: a ratio measured on a loaded machine is not a measurement. A benchmark
whose own sides run more processes than there are cores (env workers scaled past the core count)
passes `own_load=True`: its load during the rounds is its own, so only the sample before the
first round judges whether something else was running.
"""
import os
import platform
import sys
import time
from typing import Callable, Mapping

import numpy as np

THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "XLA_FLAGS")


def cpu_model() -> str | None:
  """The CPU's model name from /proc/cpuinfo (None where that file or field is missing).

  Returns:
    e.g. "AMD EPYC 7B13", or `platform.processor()` / None off Linux.
  """
  try:
    with open("/proc/cpuinfo", encoding="utf-8") as f:
      for line in f:
        if line.lower().startswith("model name"):
          return line.split(":", 1)[1].strip()
  except OSError:
    pass
  return platform.processor() or None


def thread_settings() -> dict:
  """The thread settings that change a CPU timing: OMP/MKL/OpenBLAS/XLA variables and torch's.

  Returns:
    {variable: value or None, ...} and `torch_threads` (`torch.get_num_threads()`) when torch is
    already imported by the benchmark (None otherwise; this module never imports torch).
  """
  out = {name: os.environ.get(name) for name in THREAD_VARS}
  torch = sys.modules.get("torch")
  out["torch_threads"] = torch.get_num_threads() if torch is not None else None
  return out


def token_accounting(prompt_tokens: int, response_tokens: int, counted: str) -> dict:
  """What a tokens/s figure counts, written into the summary; the same for both sides.

  Args:
    prompt_tokens: prompt (or context) tokens per timed call.
    response_tokens: response (generated or trained-on target) tokens per timed call.
    counted: "response" (only response tokens count) or "prompt+response" (every token).
  Returns:
    {prompt_tokens_per_call, response_tokens_per_call, tokens_per_s_counts, tokens_per_call,
    same_on_both_sides}.
  """
  if counted not in ("response", "prompt+response"):
    raise ValueError(f"counted must be 'response' or 'prompt+response', got {counted!r}")
  per_call = response_tokens + (prompt_tokens if counted == "prompt+response" else 0)
  return {"prompt_tokens_per_call": int(prompt_tokens),
          "response_tokens_per_call": int(response_tokens),
          "tokens_per_s_counts": f"{counted} tokens", "tokens_per_call": int(per_call),
          "same_on_both_sides": True}


def spread(values) -> dict:
  """Median, interquartile range and min-max of per-round values.

  Args:
    values: one number per round (at least one).
  Returns:
    {median, q25, q75, min, max, rounds}.
  """
  v = np.asarray(list(values), dtype=np.float64)
  q25, med, q75 = np.percentile(v, [25, 50, 75])
  return {"median": float(med), "q25": float(q25), "q75": float(q75), "min": float(v.min()),
          "max": float(v.max()), "rounds": int(v.size)}


class Rounds:
  """Interleaved timing rounds plus the load and machine state of one benchmark run.

  Args:
    rounds: timed rounds per `time` call (each side called once per round).
    warmup: untimed interleaved calls per side before the rounds (compiles, caches).
    clock, cpu_clock, loadavg, cpu_count: injectable for tests; default `time.perf_counter`,
      `time.process_time`, `os.getloadavg()[0]` and `os.cpu_count()`.
  """

  def __init__(self, rounds: int, warmup: int = 1, clock: Callable[[], float] = time.perf_counter,
               cpu_clock: Callable[[], float] = time.process_time,
               loadavg: Callable[[], float] = lambda: os.getloadavg()[0],
               cpu_count: Callable[[], int | None] = os.cpu_count, own_load: bool = False):
    if rounds < 1 or warmup < 0:
      raise ValueError(f"need rounds >= 1 and warmup >= 0, got {rounds}, {warmup}")
    self.rounds, self.warmup, self.own_load = int(rounds), int(warmup), bool(own_load)
    self._clock, self._cpu_clock, self._loadavg = clock, cpu_clock, loadavg
    self.cores = int(cpu_count() or 1)
    self.load_before = float(loadavg())
    self.load_samples = [self.load_before]

  @property
  def noisy(self) -> bool:
    """Whether the 1-minute load average exceeded one per core at any sample so far (with
    `own_load`: before the first round)."""
    judged = self.load_samples[:1] if self.own_load else self.load_samples
    return max(judged) > self.cores

  def time(self, sides: Mapping[str, Callable[[], object]],
           work: Mapping[str, float] | float = 1.0) -> dict:
    """Times every side once per round, interleaved in `sides` order, after the warm-up calls.

    Args:
      sides: {name: fn()}; `fn` must finish its work before returning (block_until_ready).
      work: units of work per call (tokens, steps, episodes), one number or one per side.
    Returns:
      {name: {"per_s": spread of work/seconds, "seconds": spread of wall seconds,
      "cpu_s": spread of process-CPU seconds, "per_s_rounds": [rate per round],
      "seconds_rounds": [wall seconds per round]}}.
    """
    work = {n: float(work[n] if isinstance(work, Mapping) else work) for n in sides}
    for _ in range(self.warmup):
      for fn in sides.values():
        fn()
    wall = {n: [] for n in sides}
    cpu = {n: [] for n in sides}
    for _ in range(self.rounds):
      for name, fn in sides.items():
        c0, t0 = self._cpu_clock(), self._clock()
        fn()
        wall[name].append(self._clock() - t0)
        cpu[name].append(self._cpu_clock() - c0)
      self.load_samples.append(float(self._loadavg()))
    out = {}
    for n in sides:
      rates = [work[n] / max(s, 1e-12) for s in wall[n]]
      out[n] = {"per_s": spread(rates), "seconds": spread(wall[n]), "cpu_s": spread(cpu[n]),
                "per_s_rounds": rates, "seconds_rounds": wall[n]}
    return out

  @staticmethod
  def compare(ours: dict, peer: dict) -> dict:
    """Ratio of the median rates of two sides of one `time` call, with its range over rounds.

    Args:
      ours, peer: entries of the dict `time` returned.
    Returns:
      {ratio: ours median / peer median, ratio_min, ratio_max: over the per-round ratios}.
    """
    per_round = [a / b for a, b in zip(ours["per_s_rounds"], peer["per_s_rounds"])]
    return {"ratio": ours["per_s"]["median"] / peer["per_s"]["median"],
            "ratio_min": min(per_round), "ratio_max": max(per_round)}

  def headline(self, value):
    """`value` on a quiet run, None on a noisy one (load above one per core at any sample)."""
    return None if self.noisy else value

  def machine(self) -> dict:
    """The machine state for summary.json: load before/after/max, cores, CPU, threads, noisy.

    "after" is the sample taken after the last timed round.

    Returns:
      {load_1min_before, load_1min_after, load_1min_max, cores, cpu_model, threads, rounds,
      warmup, noisy}.
    """
    return {"load_1min_before": self.load_before, "load_1min_after": self.load_samples[-1],
            "load_1min_max": max(self.load_samples), "cores": self.cores,
            "cpu_model": cpu_model(), "threads": thread_settings(), "rounds": self.rounds,
            "warmup": self.warmup, "noisy": self.noisy, "own_load": self.own_load}

  def note(self) -> str:
    """One markdown line for summary.md: how the ratios were measured and the load seen."""
    seen = self.load_before if self.own_load else max(self.load_samples)
    state = (f"**NOISY: the 1-min load average reached {seen:.1f} on "
             f"{self.cores} cores (above one per core), so no headline ratio is given.**"
             if self.noisy else
             f"Load average {self.load_before:.1f} before, {self.load_samples[-1]:.1f} after "
             f"(max {max(self.load_samples):.1f}), {self.cores} cores.")
    if self.own_load:
      state += (" The sides' own workers load the machine past its cores by design, so the "
                "load before the first round is what says the machine was quiet.")
    return (f"Interleaved rounds (ours, peer, ours, peer ...): {self.rounds} timed after "
            f"{self.warmup} warm-up per side; medians with [min-max] across rounds. " + state)
