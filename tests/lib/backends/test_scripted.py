"""Scripted backend: seeded determinism, batch independence, the noise model's rates."""
import numpy as np
import pytest
from scipy import stats as sps

from envs.toy.guess_env import BisectPolicy
from lib.backends.protocol import SamplingParams
from lib.backends.scripted import FunctionPolicy, NoiseModel, ScriptedBackend, apply_stop


def convs(k):
  return [[{"role": "user", "content": f"Range [0, {10 + i}]. Feedback: start."}]
          for i in range(k)]


def test_same_seed_same_replies_independent_of_batch():
  b1 = ScriptedBackend(BisectPolicy(NoiseModel({"guess": 0.5})), seed=3)
  b2 = ScriptedBackend(BisectPolicy(NoiseModel({"guess": 0.5})), seed=3)
  cs = convs(40)
  ps = [SamplingParams(seed=i) for i in range(40)]
  full = [c.text for c in b1.generate(cs, ps)]
  # Reversed order, split into odd batches: every conversation still gets the same reply.
  rev = [c.text for c in b2.generate(cs[::-1], ps[::-1])][::-1]
  parts = [c.text for c in b2.generate(cs[:7], ps[:7])] + \
      [c.text for c in b2.generate(cs[7:], ps[7:])]
  assert full == rev == parts
  other = [c.text for c in ScriptedBackend(BisectPolicy(NoiseModel({"guess": 0.5})),
                                           seed=4).generate(cs, ps)]
  assert other != full
  reseeded = [c.text for c in b1.generate(cs, [SamplingParams(seed=1000 + i) for i in range(40)])]
  assert reseeded != full


def test_noise_rate_matches_configuration():
  rate, n = 0.3, 2000
  policy = FunctionPolicy(lambda m, rng: "x" if NoiseModel({"p": rate}).fires("p", rng) else "y")
  b = ScriptedBackend(policy, seed=0)
  out = b.generate([[{"role": "user", "content": "q"}]] * n, [SamplingParams(seed=i)
                                                             for i in range(n)])
  k = sum(c.text == "x" for c in out)
  assert sps.binomtest(k, n, rate).pvalue > 1e-3
  assert b.usage.snapshot()["calls"] == n and b.usage.snapshot()["batches"] == 1


def test_noise_model_validation_and_corrupt():
  with pytest.raises(ValueError):
    NoiseModel({"a": 1.5})
  nm = NoiseModel({"a": 1.0, "b": 0.0})
  with pytest.raises(KeyError, match="configured"):
    nm.rate("typo")
  rng = np.random.default_rng(0)
  assert all(nm.corrupt("a", 2, [0, 1, 2, 3], rng) != 2 for _ in range(50))
  assert all(nm.corrupt("b", 2, [0, 1, 2, 3], rng) == 2 for _ in range(50))


def test_stop_strings_and_usage_not_invented():
  b = ScriptedBackend(FunctionPolicy(lambda m, rng: "act: up\nObservation: ..."))
  (c,) = b.generate([[{"role": "user", "content": "go"}]], SamplingParams(stop=["\nObs"]))
  assert c.text == "act: up" and c.ok
  assert c.input_tokens is None and c.output_tokens is None
  assert apply_stop("abcabc", ["c", "b"]) == ("a", "stop")


def test_bad_conversations_raise():
  b = ScriptedBackend(FunctionPolicy(lambda m, rng: ""))
  with pytest.raises(TypeError):
    b.generate(["just a string"])
  with pytest.raises(ValueError, match="role"):
    b.generate([[{"role": "robot", "content": "x"}]])
  with pytest.raises(ValueError, match="SamplingParams"):
    b.generate(convs(2), [SamplingParams()])


def test_policy_exception_becomes_failed_completions():
  def boom(m, rng):
    raise RuntimeError("policy bug")
  b = ScriptedBackend(FunctionPolicy(boom))
  out = b.generate(convs(3))
  assert [c.error for c in out] == ["backend_exception"] * 3
  assert "policy bug" in out[0].error_detail
  assert b.usage.snapshot()["failed_calls"] == 3
