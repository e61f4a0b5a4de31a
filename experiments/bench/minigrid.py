"""MiniGrid/BabyAI throughput: our JAX BabyAI envs vs Farama `minigrid`, navix and xminigrid.

python launch.py --config=configs/bench/minigrid.py --workdir=runs/bench_minigrid

Every row is measured in this run on this machine (steps/s = env transitions per second):
- ours: `batch` envs, jit(lax.scan(`steps`)) of uniformly random actions through
  `envs.wrappers.VmapAutoReset` (finished episodes restart from a pre-drawn level pool that is
  refreshed while stepping); every step computes the 7x7 egocentric view, and every row
  (ours and the peers) sums all of its observation bytes into the scan output. The initial
  reset (drawing 2 x batch levels) is setup and is not timed, for every JAX row alike; the
  timed call steps from the state the previous call left. Best of `repeats` after a compile.
- farama: one `gym.make(task)` env stepped with random actions in a Python loop, reset on
  termination/truncation (Farama's own `step` also builds the 7x7 view); best of `repeats`
  chunks of `farama_steps`, timed in the same round robin as the JAX rows.
- navix `Navix-GoToDoor-8x8-v0` (first-person symbolic 7x7 observation, its built-in
  auto-reset) and xminigrid `MiniGrid-BlockedUnlockPickUp` (`GymAutoResetWrapper`), vmapped
  like ours. They are the closest JAX peers: navix has only MiniGrid's single-room 8x8 GoToDoor
  (our BabyAI-GoToDoor is 3x3 rooms on a 19x19 grid), xminigrid's BlockedUnlockPickUp is the
  same 11x6 two-room level as BabyAI's. A peer that fails to import or run is reported with its
  error, never dropped.
`ratio` divides by the `baseline` row (Farama on the same or comparable task);
`ratio_vs_peer` divides our row by the comparable JAX peer's row.
"""
import time

import jax
import numpy as np
from absl import logging

from envs import registry
from envs.wrappers import VmapAutoReset
from lib import tb
from lib.results import write_summary

TASKS = ("BabyAI-GoToRedBall-v0", "BabyAI-GoToObj-v0", "BabyAI-GoToLocal-v0", "BabyAI-GoTo-v0",
         "BabyAI-GoToDoor-v0", "BabyAI-BlockedUnlockPickup-v0")
PEERS = {  # peer row name -> (our comparable task, builder name)
    "minigrid/navix/Navix-GoToDoor-8x8-v0": ("BabyAI-GoToDoor-v0", "_navix"),
    "minigrid/xminigrid/MiniGrid-BlockedUnlockPickUp": ("BabyAI-BlockedUnlockPickup-v0",
                                                        "_xminigrid"),
}


def _checksum(obs):
  """Every byte of every observation feeds the scan output: reading one cell would let XLA
  drop most of the view computation as dead code."""
  return obs.astype(jax.numpy.int32).sum()


def _stepper(init, step, batch, steps):
  """(jit(init)(key) -> carry, jit(run)(carry, key) -> (carry, stats)) for a scan of steps."""
  def run(carry, key):
    def body(carry, k):
      carry, stats = step(carry, k)
      return carry, stats
    return jax.lax.scan(body, carry, jax.random.split(key, steps))
  return jax.jit(init), jax.jit(run)


def _ours(task, batch, steps):
  env = registry.make(task)
  wrapper = VmapAutoReset(env, batch)

  def step(state, k):
    k_act, k_step = jax.random.split(k)
    action = jax.random.randint(k_act, (batch,), 0, env.num_actions)
    obs, state, reward, term, trunc, _ = wrapper.step(k_step, state, action)
    return state, (reward.sum(), (term | trunc).sum(), _checksum(obs))

  return _stepper(lambda key: wrapper.reset(key)[1], step, batch, steps)


def _navix(batch, steps):
  import navix as nx  # optional peer, not a dependency: a failed import is reported as this row
  env = nx.make("Navix-GoToDoor-8x8-v0", observation_fn=nx.observations.symbolic_first_person)

  def step(ts, k):
    action = jax.random.randint(k, (batch,), 0, 7)
    ts = jax.vmap(env.step)(ts, action)
    return ts, (ts.reward.sum(), (ts.step_type > 0).sum(), _checksum(ts.observation))

  return _stepper(lambda key: jax.vmap(env.reset)(jax.random.split(key, batch)), step, batch,
                  steps)


def _xminigrid(batch, steps):
  import xminigrid  # optional peer, not a dependency: a failed import is reported as this row
  from xminigrid.wrappers import GymAutoResetWrapper  # optional peer, as above
  env, params = xminigrid.make("MiniGrid-BlockedUnlockPickUp")
  env = GymAutoResetWrapper(env)

  def step(ts, k):
    action = jax.random.randint(k, (batch,), 0, 6)
    ts = jax.vmap(env.step, in_axes=(None, 0, 0))(params, ts, action)
    return ts, (ts.reward.sum(), ts.last().sum(), _checksum(ts.observation))

  reset = lambda key: jax.vmap(env.reset, in_axes=(None, 0))(params, jax.random.split(key, batch))
  return _stepper(reset, step, batch, steps)


class FaramaRunner:
  """One Farama env stepped with seeded random actions, reset on termination/truncation;
  each call times `n_steps` steps and returns the elapsed seconds."""

  def __init__(self, task: str, n_steps: int, seed: int):
    import gymnasium as gym  # Farama's MiniGrid: the optional `envs` extra, imported when timed
    import minigrid  # noqa: F401  (registers the BabyAI ids)
    self.env = gym.make(task)
    self.env.reset(seed=seed)
    self.rng = np.random.default_rng(seed)
    self.n_steps = n_steps

  def __call__(self) -> float:
    actions = self.rng.integers(0, 7, self.n_steps)
    start = time.perf_counter()
    for a in actions:
      _, _, term, trunc, _ = self.env.step(int(a))
      if term or trunc:
        self.env.reset()
    return time.perf_counter() - start


def _best_seconds(runners: dict, farama: dict, key, repeats: int) -> dict:
  """Fastest of `repeats` timed calls per row. JAX runners are (carry, run) and continue the
  previous carry; Farama runners time themselves. All rows are interleaved round robin, so a
  burst of load from other processes hits ours and the baseline alike."""
  best = {name: float("inf") for name in [*runners, *farama]}
  for i in range(repeats):
    k = jax.random.fold_in(key, i + 1)
    for name, (carry, run) in runners.items():
      start = time.perf_counter()
      carry, stats = run(carry, k)
      jax.block_until_ready(stats)
      best[name] = min(best[name], time.perf_counter() - start)
      runners[name] = (carry, run)
    for name, runner in farama.items():
      best[name] = min(best[name], runner())
  return best


def _options(config) -> dict:
  opts = dict(config.get("minigrid", {}) or {})
  debug = bool(opts.get("debug", False))
  return {"tasks": list(opts.get("tasks", TASKS[:1] + TASKS[4:] if debug else TASKS)),
          "peers": bool(opts.get("peers", True)),
          "farama_steps": int(opts.get("farama_steps", 300 if debug else 3000))}


def measure(config) -> list[dict]:
  """Rows {name, env, impl, batch, steps_per_s, baseline, ratio[, peer, ratio_vs_peer, error]}."""
  opts = _options(config)
  batch, steps, repeats = int(config.batch), int(config.steps), int(config.repeats)
  key = jax.random.key(config.seed)
  rows, fns = [], {}

  def add(name, env_id, impl, build, baseline):
    row = {"name": name, "env": env_id, "impl": impl, "batch": batch,
           "steps_per_s": float("nan"), "baseline": baseline}
    try:  # a peer that cannot be built or run is reported with its error
      init, run = build()
      carry, _ = run(init(key), key)           # compile and warm up; the second call also
      carry, stats = run(carry, key)           # compiles if the carry's types changed (navix)
      jax.block_until_ready(stats)
      fns[name] = (carry, run)
    except Exception as e:  # noqa: BLE001
      row["error"] = f"{type(e).__name__}: {e}"[:300]
      logging.warning("bench_minigrid: %s failed: %s", name, row["error"])
    rows.append(row)

  for task in opts["tasks"]:
    add(f"minigrid/{task}/ours", task, "ours", lambda t=task: _ours(t, batch, steps),
        f"minigrid/{task}/farama")
  if opts["peers"]:
    for name, (task, builder) in PEERS.items():
      if task in opts["tasks"]:
        env_id = name.split("/")[-1]
        add(name, env_id, name.split("/")[1],
            lambda b=builder: globals()[b](batch, steps), f"minigrid/{task}/farama")
  farama = {}
  for task in opts["tasks"]:
    name = f"minigrid/{task}/farama"
    farama[name] = FaramaRunner(task, opts["farama_steps"], int(config.seed))
    rows.append({"name": name, "env": task, "impl": "farama", "batch": 1,
                 "steps_per_s": float("nan"), "baseline": None})
  for name, seconds in _best_seconds(fns, farama, key, repeats).items():
    row = next(r for r in rows if r["name"] == name)
    row["steps_per_s"] = (batch * steps if name in fns else opts["farama_steps"]) / seconds
  by_name = {r["name"]: r for r in rows}
  for r in rows:
    base = by_name.get(r["baseline"] or "")
    r["ratio"] = (r["steps_per_s"] / base["steps_per_s"]) if base else float("nan")
  for name, (task, _) in PEERS.items():
    ours, peer = by_name.get(f"minigrid/{task}/ours"), by_name.get(name)
    if ours and peer:
      ours["peer"] = name
      ours["ratio_vs_peer"] = ours["steps_per_s"] / peer["steps_per_s"]
  return rows


def run(config, workdir):
  rows = measure(config)
  writer = tb.writer(workdir)
  lines = [f"{'name':<52} {'batch':>5} {'steps/s':>14} {'x farama':>9} {'x peer':>8}"]
  for r in rows:
    lines.append(f"{r['name']:<52} {r['batch']:>5} {r['steps_per_s']:>14,.0f} "
                 f"{r['ratio']:>9.1f} {r.get('ratio_vs_peer', float('nan')):>8.2f}"
                 + (f"  ERROR {r['error']}" if "error" in r else ""))
    if np.isfinite(r["steps_per_s"]):
      writer.add_scalar(f"bench_minigrid/{r['name']}/steps_per_s", r["steps_per_s"], 0)
  table = "\n".join(lines)
  print(table, flush=True)
  logging.info("bench_minigrid:\n%s", table)
  summary = {"batch": config.batch, "steps": config.steps, "repeats": config.repeats,
             "backend": jax.default_backend(), "devices": str(jax.devices())}
  write_summary(workdir, summary, rows, title="MiniGrid/BabyAI throughput (steps/s)",
                notes=f"batch {config.batch}, {config.steps} scan steps, best of "
                      f"{config.repeats}; Farama single env. backend {jax.default_backend()}.")
  return summary
