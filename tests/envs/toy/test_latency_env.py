"""LatencyEnv: sleeps its latency without CPU, ends after its steps, replays a seed exactly; its
scripted EchoPolicy depends on the conversation and the request generator only."""
import time

import numpy as np
import pytest

from envs.toy.latency_env import EchoPolicy, LatencyEnv


def test_steps_sleep_their_latency_without_cpu_and_end_with_success():
  env = LatencyEnv(step_latency_s=0.05, episode_steps=3)
  obs, info = env.reset(7)
  assert info == {} and "Step 0 of 3" in obs
  wall, cpu = time.perf_counter(), time.process_time()
  outs = [env.step(i) for i in range(3)]
  wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
  assert wall >= 3 * 0.05 and cpu < 0.05   # the time went to sleeping, not computing
  assert [o[2] for o in outs] == [False, False, True]
  assert [o[1] for o in outs] == [0.0, 0.0, 1.0] and outs[-1][4] == {"success": True}
  assert not any(o[3] for o in outs) and "Last action: 2" in outs[-1][0]


def test_same_seed_same_observations_and_reset_latency():
  env = LatencyEnv(step_latency_s=0.0, episode_steps=2, reset_latency_s=0.02)
  t0 = time.perf_counter()
  first = env.reset(3)[0]
  assert time.perf_counter() - t0 >= 0.02
  assert env.reset(3)[0] == first
  numbers = {LatencyEnv(0.0).reset(s)[0] for s in range(20)}
  assert len(numbers) > 1      # seeds draw different episode numbers


@pytest.mark.parametrize("kwargs", [dict(step_latency_s=-1.0), dict(episode_steps=0),
                                    dict(reset_latency_s=-0.1)])
def test_bad_settings_raise(kwargs):
  with pytest.raises(ValueError):
    LatencyEnv(**kwargs)


def test_echo_policy_reads_the_episode_number():
  obs = LatencyEnv(0.0).reset(5)[0]
  number = int(obs.split("Episode number ")[1].split(".")[0])
  messages = [{"role": "user", "content": f"Observation 1/1:\n{obs}"}]
  reply = EchoPolicy().respond(messages, np.random.default_rng(0))
  again = EchoPolicy().respond(messages, np.random.default_rng(0))
  assert reply == again and reply.startswith("I pick ")
  assert number <= int(reply.split()[-1]) < number + 10
  assert EchoPolicy().respond([{"role": "user", "content": "no number"}],
                              np.random.default_rng(0)).startswith("I pick ")
