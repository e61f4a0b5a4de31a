"""MiniGrid/BabyAI throughput: our JAX BabyAI envs vs Farama `minigrid`, navix and xminigrid.

python launch.py --config=configs/bench/minigrid.py --workdir=runs/bench_minigrid

Every row is measured in this run on this machine (steps/s = env transitions per second):
- ours: `batch` envs, jit(lax.scan(`steps`)) of uniformly random actions through
  `envs.wrappers.VmapAutoReset` (finished episodes restart from a pre-drawn level pool that is
  refreshed while stepping); every step computes the 7x7 egocentric view, and every row
  (ours and the peers) sums all of its observation bytes into the scan output. The initial
  reset (drawing 2 x batch levels) is setup and is not timed, for every JAX row alike; the
  timed call steps from the state the previous call left.
- farama: one `gym.make(task)` env stepped with random actions in a Python loop, reset on
  termination/truncation (Farama's own `step` also builds the 7x7 view), `farama_steps` per call.
- navix `Navix-GoToDoor-8x8-v0` (first-person symbolic 7x7 observation, its built-in
  auto-reset) and xminigrid `MiniGrid-BlockedUnlockPickUp` (`GymAutoResetWrapper`), vmapped
  like ours. They are the closest JAX peers: navix has only MiniGrid's single-room 8x8 GoToDoor
  (our BabyAI-GoToDoor is 3x3 rooms on a 19x19 grid), xminigrid's BlockedUnlockPickUp is the
  same 11x6 two-room level as BabyAI's. A peer that fails to import or run is reported with its
  error, never dropped.
Timing (`lib.bench.rounds`): after a compile, `rounds` interleaved rounds (every row once per
round, one warm-up call each); steps/s is the median over rounds with its min-max. `ratio` divides
by the median of the `baseline` row (Farama on the same or comparable task), `ratio_vs_peer` our row
by the comparable JAX peer's row, each with its range over rounds. The summary records the load,
CPU and threads, and has no headline ratios when the run was noisy (load above one per core).
"""
import jax
import numpy as np
from absl import logging

from envs import registry
from envs.wrappers import VmapAutoReset
from lib.bench.rounds import Rounds
from lib.run import tb
from lib.run.results import write_summary

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
  each call steps `n_steps` times (actions drawn before the loop)."""

  def __init__(self, task: str, n_steps: int, seed: int):
    import gymnasium as gym  # Farama's MiniGrid: the optional `envs` extra, imported when timed
    import minigrid  # noqa: F401  (registers the BabyAI ids)
    self.env = gym.make(task)
    self.env.reset(seed=seed)
    self.rng = np.random.default_rng(seed)
    self.n_steps = n_steps

  def __call__(self) -> None:
    for a in self.rng.integers(0, 7, self.n_steps).tolist():
      _, _, term, trunc, _ = self.env.step(a)
      if term or trunc:
        self.env.reset()


def _jax_side(carry, run, key):
  """A no-argument call for `Rounds.time`: one scan from the previous call's carry, a fresh key
  per call."""
  state = {"carry": carry, "calls": 0}

  def call():
    state["calls"] += 1
    state["carry"], stats = run(state["carry"], jax.random.fold_in(key, state["calls"]))
    jax.block_until_ready(stats)
  return call


def _options(config) -> dict:
  m = config.minigrid
  return {"tasks": list(m.tasks), "peers": bool(m.peers), "farama_steps": int(m.farama_steps)}


def measure(config, timer: Rounds | None = None) -> list[dict]:
  """Times every row in interleaved rounds.

  Args:
    config: the benchmark config (`seed`, `batch`, `steps`, `rounds`, `minigrid` options).
    timer: the run's `Rounds` (a new one of `config.rounds` rounds when None).
  Returns:
    rows {name, env, impl, batch, steps_per_s (median), steps_per_s_min/max, baseline, ratio,
    ratio_min/max[, peer, ratio_vs_peer, ratio_vs_peer_min/max, error]}.
  """
  opts = _options(config)
  timer = timer or Rounds(int(config.rounds), warmup=1)
  batch, steps = int(config.batch), int(config.steps)
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
  sides = {name: _jax_side(carry, run, key) for name, (carry, run) in fns.items()}
  sides.update(farama)
  work = {name: batch * steps if name in fns else opts["farama_steps"] for name in sides}
  timed = timer.time(sides, work=work)
  by_name = {r["name"]: r for r in rows}
  for name, t in timed.items():
    by_name[name].update(steps_per_s=t["per_s"]["median"], steps_per_s_min=t["per_s"]["min"],
                         steps_per_s_max=t["per_s"]["max"])
  nan = float("nan")
  for r in rows:
    both = r["name"] in timed and (r["baseline"] or "") in timed
    cmp = Rounds.compare(timed[r["name"]], timed[r["baseline"]]) if both else {}
    r.update(ratio=cmp.get("ratio", nan), ratio_min=cmp.get("ratio_min", nan),
             ratio_max=cmp.get("ratio_max", nan))
  for name, (task, _) in PEERS.items():
    ours = f"minigrid/{task}/ours"
    if ours in by_name and name in by_name:
      by_name[ours]["peer"] = name
      both = ours in timed and name in timed
      cmp = Rounds.compare(timed[ours], timed[name]) if both else {}
      by_name[ours].update(ratio_vs_peer=cmp.get("ratio", nan),
                           ratio_vs_peer_min=cmp.get("ratio_min", nan),
                           ratio_vs_peer_max=cmp.get("ratio_max", nan))
  return rows


def run(config, workdir):
  timer = Rounds(int(config.rounds), warmup=1)
  rows = measure(config, timer)
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
  print(timer.note(), flush=True)
  machine = timer.machine()
  summary = {"batch": config.batch, "steps": config.steps, "rounds": config.rounds,
             "backend": jax.default_backend(), "devices": str(jax.devices()),
             "noisy": machine["noisy"],
             "ratio_vs_farama": {r["name"]: timer.headline(r["ratio"]) for r in rows
                                 if r["baseline"]},
             "ratio_vs_peer": {r["name"]: timer.headline(r["ratio_vs_peer"]) for r in rows
                               if "ratio_vs_peer" in r},
             "machine": machine}
  write_summary(workdir, summary, rows, title="MiniGrid/BabyAI throughput (steps/s)",
                notes=f"batch {config.batch}, {config.steps} scan steps; steps/s is the median "
                      f"over rounds; Farama single env. backend {jax.default_backend()}. "
                      + timer.note())
  return summary
