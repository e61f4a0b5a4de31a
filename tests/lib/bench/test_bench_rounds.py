"""lib/bench/rounds.py on fake clocks and fake load: order, medians, spread, noisy flag."""
import json
import sys

import numpy as np
import pytest

from lib.bench import rounds as bench_rounds
from lib.bench.rounds import Rounds


class FakeClock:
  """A clock that each side advances by its own scripted durations."""

  def __init__(self):
    self.now = 0.0

  def __call__(self):
    return self.now


def _sides(clock, calls, durations):
  def make(name):
    it = iter(durations[name])

    def fn():
      calls.append(name)
      clock.now += next(it)
    return fn
  return {name: make(name) for name in durations}


def test_sides_are_interleaved_after_the_warmup():
  clock, calls = FakeClock(), []
  durations = {"ours": [9.0, 1.0, 1.0, 1.0], "peer": [9.0, 2.0, 2.0, 2.0]}
  r = Rounds(3, warmup=1, clock=clock, cpu_clock=clock, loadavg=lambda: 0.5, cpu_count=lambda: 2)
  out = r.time(_sides(clock, calls, durations), work=10.0)
  assert calls == ["ours", "peer"] * 4
  assert out["ours"]["seconds"]["max"] == 1.0        # the 9 s warm-up call is not counted
  assert out["ours"]["per_s"]["median"] == 10.0 and out["peer"]["per_s"]["median"] == 5.0


def test_median_spread_and_ratio_range():
  clock, calls = FakeClock(), []
  durations = {"ours": [1.0, 2.0, 4.0, 1.0, 1.0], "peer": [2.0, 2.0, 2.0, 4.0, 8.0]}
  r = Rounds(5, warmup=0, clock=clock, cpu_clock=clock, loadavg=lambda: 0.0, cpu_count=lambda: 4)
  out = r.time(_sides(clock, calls, durations), work={"ours": 8.0, "peer": 8.0})
  rates = [8.0, 4.0, 2.0, 8.0, 8.0]
  s = out["ours"]["per_s"]
  assert s["median"] == np.median(rates) == 8.0
  assert (s["min"], s["max"]) == (2.0, 8.0)
  assert (s["q25"], s["q75"]) == (np.percentile(rates, 25), np.percentile(rates, 75))
  cmp = Rounds.compare(out["ours"], out["peer"])
  assert cmp["ratio"] == 8.0 / 4.0                   # median 8 tok/s vs median 4 tok/s
  per_round = [8 / 4, 4 / 4, 2 / 4, 8 / 2, 8 / 1]
  assert (cmp["ratio_min"], cmp["ratio_max"]) == (min(per_round), max(per_round))
  assert r.headline(cmp["ratio"]) == 2.0 and r.machine()["noisy"] is False


def test_load_above_one_per_core_at_any_sample_makes_the_run_noisy():
  clock, calls = FakeClock(), []
  loads = iter([1.0, 1.5, 2.5, 1.0])                 # before, then one per round; 2 cores
  r = Rounds(3, warmup=0, clock=clock, cpu_clock=clock, loadavg=lambda: next(loads),
             cpu_count=lambda: 2)
  out = r.time(_sides(clock, calls, {"a": [1.0] * 3, "b": [2.0] * 3}))
  assert r.noisy and r.headline(Rounds.compare(out["a"], out["b"])["ratio"]) is None
  m = r.machine()
  assert m["noisy"] is True and m["load_1min_max"] == 2.5
  assert (m["load_1min_before"], m["load_1min_after"], m["cores"]) == (1.0, 1.0, 2)
  assert "NOISY" in r.note()
  json.dumps(m, allow_nan=False)                     # strict JSON as it stands


def test_own_load_judges_only_the_load_before_the_first_round():
  """A benchmark whose own workers outnumber the cores loads the machine itself: the rounds'
  samples do not make it noisy, the sample before them does."""
  clock = FakeClock()
  loads = iter([1.0, 9.0, 12.0])                     # before, then one per round; 2 cores
  r = Rounds(2, warmup=0, clock=clock, cpu_clock=clock, loadavg=lambda: next(loads),
             cpu_count=lambda: 2, own_load=True)
  r.time(_sides(clock, [], {"a": [1.0] * 2}))
  assert not r.noisy and r.headline(3.0) == 3.0 and r.machine()["load_1min_max"] == 12.0
  assert "max 12.0" in r.note() and "by design" in r.note()
  busy = Rounds(1, warmup=0, clock=clock, cpu_clock=clock, loadavg=lambda: 3.0,
                cpu_count=lambda: 2, own_load=True)
  busy.time(_sides(clock, [], {"a": [1.0]}))
  assert busy.noisy and busy.headline(3.0) is None and "NOISY" in busy.note()


def test_load_at_one_per_core_is_quiet():
  r = Rounds(1, warmup=0, loadavg=lambda: 2.0, cpu_count=lambda: 2)
  r.time({"a": lambda: None})
  assert not r.noisy and r.headline(1.5) == 1.5 and "NOISY" not in r.note()


def test_machine_state_records_cpu_and_threads(monkeypatch):
  monkeypatch.setenv("OMP_NUM_THREADS", "3")
  monkeypatch.delitem(sys.modules, "torch", raising=False)
  r = Rounds(2, loadavg=lambda: 0.1, cpu_count=lambda: 8)
  m = r.machine()
  assert m["threads"]["OMP_NUM_THREADS"] == "3" and m["threads"]["torch_threads"] is None
  assert "XLA_FLAGS" in m["threads"] and m["cores"] == 8 and (m["rounds"], m["warmup"]) == (2, 1)
  with open("/proc/cpuinfo", encoding="utf-8") as f:
    names = [l.split(":", 1)[1].strip() for l in f if l.lower().startswith("model name")]
  assert bench_rounds.cpu_model() == (names[0] if names else bench_rounds.cpu_model())


def test_token_accounting_and_bad_arguments():
  t = bench_rounds.token_accounting(16, 128, "response")
  assert t["tokens_per_call"] == 128 and t["tokens_per_s_counts"] == "response tokens"
  assert bench_rounds.token_accounting(64, 64, "prompt+response")["tokens_per_call"] == 128
  with pytest.raises(ValueError):
    bench_rounds.token_accounting(1, 1, "all")
  with pytest.raises(ValueError):
    Rounds(0)
