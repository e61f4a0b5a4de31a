"""envs.host_adapter.JaxEnvAdapter: a gymnax-style env behind the host-loop API, driven by the loop."""
import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from envs import base
from envs.host_adapter import JaxEnvAdapter
from lib.backends.scripted import FunctionPolicy, ScriptedBackend
from lib.hostloop.agent import Act, ModelRequest, scalar_info
from lib.hostloop.loop import EpisodeJob, HostLoop
from lib.run.results import ResultsLog


@struct.dataclass
class CorridorState(base.EnvState):
  pos: jax.Array
  goal: jax.Array


@struct.dataclass
class CorridorParams(base.EnvParams):
  length: int = 8
  max_steps_in_episode: int = 6


class Corridor(base.Environment):
  """1-D corridor: start at a random cell, goal at a random cell; actions 0=left, 1=right."""

  @property
  def default_params(self):
    return CorridorParams()

  def reset_env(self, key, params):
    k1, k2 = jax.random.split(key)
    state = CorridorState(time=0, pos=jax.random.randint(k1, (), 0, params.length),
                          goal=jax.random.randint(k2, (), 0, params.length))
    return self.get_obs(state), state

  def step_env(self, key, state, action, params):
    pos = jnp.clip(state.pos + 2 * action - 1, 0, params.length - 1)
    state = state.replace(pos=pos, time=state.time + 1)
    done = pos == state.goal
    return self.get_obs(state), state, done.astype(jnp.float32), done, {"dist": jnp.abs(
        pos - state.goal)}

  def get_obs(self, state, params=None, key=None):
    return jnp.stack([state.pos, state.goal])

  def is_terminated(self, state, params):
    return state.pos == state.goal


def test_adapter_matches_env_and_truncates():
  env = Corridor()
  a = JaxEnvAdapter(env)
  obs, _ = a.reset(5)
  _, ref_state = env.reset_env(jax.random.split(jax.random.PRNGKey(5))[1], env.default_params)
  np.testing.assert_array_equal(obs, [ref_state.pos, ref_state.goal])
  for t in range(6):
    before = int(a.state.pos)
    obs, r, term, trunc, info = a.step(0)
    assert int(obs[0]) == max(before - 1, 0) and int(a.state.time) == t + 1
    assert scalar_info(info)["dist"] == abs(int(obs[0]) - int(obs[1]))
    if term:
      break
  assert term or trunc  # 6 steps: reached the goal or hit the time limit
  assert not (term and trunc)


class WalkAgent:
  """Asks the model which way to go from the rendered observation; parses 'left'/'right'."""

  def reset(self, obs, info):
    self.obs, self.pending = obs, None

  def next(self):
    if self.pending is not None:
      act, self.pending = self.pending, None
      return Act(act)
    return ModelRequest([{"role": "user", "content": f"pos={int(self.obs[0])} "
                                                     f"goal={int(self.obs[1])}"}])

  def consume(self, completion):
    self.pending = 1 if completion.text == "right" else 0

  def observe(self, obs, reward, terminated, truncated, info):
    self.obs = obs


def test_host_loop_drives_jax_env_to_goal(tmp_path):
  def walk(messages, rng):
    pos, goal = [int(t.split("=")[1]) for t in messages[-1]["content"].split()]
    return "right" if goal > pos else "left"

  env = Corridor()
  specs = [EpisodeJob(key={"i": i}, env_seed=i, make_env=lambda: JaxEnvAdapter(
      env, CorridorParams(max_steps_in_episode=20)), make_agent=WalkAgent) for i in range(6)]
  with ResultsLog(str(tmp_path), key=("i",)) as log:
    HostLoop(ScriptedBackend(FunctionPolicy(walk)), action_budget=20, call_budget=20,
             show_progress=False).run(specs, log)
    rows = sorted(log.rows(), key=lambda r: r["i"])
  for r in rows:
    a = JaxEnvAdapter(env)
    obs, _ = a.reset(r["env_seed"])
    dist = abs(int(obs[0]) - int(obs[1]))
    assert r["status"] == "success" and r["return"] == 1.0
    # Goal at the start: one step left and one back (or a single bump at the wall).
    assert r["actions"] == dist if dist else r["actions"] in (1, 2)
  assert sum(r["actions"] > 0 for r in rows) == 6
