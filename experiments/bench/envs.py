"""Environment throughput benchmark: steps/s of batched random-action rollouts with auto-reset.

Every row is measured in this run on this machine: a jitted `lax.scan` of `steps` random actions
over `batch` envs, compiled first, then `rounds` interleaved rounds (`lib.bench.rounds`: every row
once per round, after one warm-up call each). `steps_per_s` is the median over rounds (min-max
beside it); `ratio` is that median over the median of the row named in its `baseline` field
(measured in the same run), with its range over the per-round ratios. The summary records the
load average, CPU and thread settings, and gives no headline ratios when the run was noisy (load
above one per core).

Sections (a list, so other env families add theirs with one entry):
- sokoban (here): ours through `VmapAutoReset` and through gymnax-style `vmap(env.step)` (a reset
  computed every step), vs jumanji's `Sokoban` under `VmapAutoResetWrapper`, on the same bank of
  generated 10x10 four-box levels (jumanji is fixed to that size) and the same 120-step limit.
- minigrid: `experiments.bench.minigrid.measure(config, timer) -> list[dict]`, when that module
  exists.

Choice of Sokoban implementation: ours. jumanji's rules and rewards are identical (the test
`test_matches_jumanji_sokoban_on_random_actions` checks step-by-step equality), but it has no
gymnax interface or terminated/truncated split, is fixed to 10x10 boards with exactly four boxes,
and its default level source downloads Boxoban. Ours is also faster at batch 1024 on CPU (see the
README table), mainly because its auto-reset is a gather from a pre-drawn pool instead of a
per-env `lax.cond` that becomes a select over a full reset under `vmap`.
"""
import importlib

import jax
import numpy as np
from absl import logging

from envs.sokoban import env as sk
from envs.sokoban import generator, jumanji_peer
from envs.wrappers import VmapAutoReset
from lib.bench.rounds import Rounds
from lib.run import tb
from lib.run.results import write_summary

# (section name, module, function) — each function maps (config, timer) -> list of row dicts
SECTIONS = [
    ("sokoban", "experiments.bench.envs", "sokoban_rows"),
    ("minigrid", "experiments.bench.minigrid", "measure"),
]


def rollout_rates(fns: dict, key, timer: Rounds, work: float) -> dict:
  """Interleaved rounds of already-compiled jitted `fn(key)` (a fresh key per call).

  Args:
    fns: {row name: jitted fn(key)}.
    key: the base key; call i uses `fold_in(key, i + 1)`.
    timer: the run's `Rounds`.
    work: env steps per call (batch x steps).
  Returns:
    `timer.time`'s dict: {row name: {"per_s": spread, "per_s_rounds": [...], ...}}.
  """
  def side(fn):
    calls = [0]

    def call():
      calls[0] += 1
      jax.block_until_ready(fn(jax.random.fold_in(key, calls[0])))
    return call

  return timer.time({name: side(fn) for name, fn in fns.items()}, work=work)


def fill_rates(rows: list[dict], timed: dict) -> None:
  """Writes each timed row's median steps/s, its min-max and its per-round rates into the row."""
  for row in rows:
    if row["name"] in timed:
      t = timed[row["name"]]
      row.update(steps_per_s=t["per_s"]["median"], steps_per_s_min=t["per_s"]["min"],
                 steps_per_s_max=t["per_s"]["max"], per_round=t["per_s_rounds"])


def _ours_pooled(env, batch, steps):
  w = VmapAutoReset(env, batch)

  def run(key):
    _, state = w.reset(key)

    def body(state, k):
      a = jax.random.randint(k, (batch,), 0, 4)
      _, state, reward, term, trunc, _ = w.step(k, state, a)
      return state, (reward.sum(), (term | trunc).sum())

    return jax.lax.scan(body, state, jax.random.split(key, steps))[1]

  return jax.jit(run)


def _ours_gymnax_step(env, batch, steps):
  params = env.default_params

  def run(key):
    _, state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(key, batch), params)

    def body(state, k):
      a = jax.random.randint(k, (batch,), 0, 4)
      _, state, reward, term, trunc, _ = jax.vmap(env.step, in_axes=(0, 0, 0, None))(
          jax.random.split(k, batch), state, a, params)
      return state, (reward.sum(), (term | trunc).sum())

    return jax.lax.scan(body, state, jax.random.split(key, steps))[1]

  return jax.jit(run)


def _jumanji(levels, batch, steps, time_limit):
  # jumanji is an optional peer (the `test` extra): a machine without it reports this row's error
  from jumanji.environments.routing.sokoban import Sokoban as JSokoban
  from jumanji.wrappers import VmapAutoResetWrapper  # optional peer, as above
  env = VmapAutoResetWrapper(JSokoban(generator=jumanji_peer.make_bank_generator(levels),
                                      time_limit=time_limit))

  def run(key):
    state, _ = env.reset(jax.random.split(key, batch))

    def body(state, k):
      a = jax.random.randint(k, (batch,), 0, 4)
      state, ts = env.step(state, a)
      return state, (ts.reward.sum(), ts.last().sum())

    return jax.lax.scan(body, state, jax.random.split(key, steps))[1]

  return jax.jit(run)


def sokoban_rows(config, timer: Rounds) -> list[dict]:
  c = config.sokoban
  levels = generator.generate_levels(config.seed, c.num_levels, 10, 10, 4)
  env = sk.Sokoban(levels, c.max_steps)
  key = jax.random.key(config.seed)
  candidates = {
      "sokoban/ours_pooled_reset": lambda: _ours_pooled(env, config.batch, config.steps),
      "sokoban/ours_gymnax_step": lambda: _ours_gymnax_step(env, config.batch, config.steps),
      "sokoban/jumanji": lambda: _jumanji(levels, config.batch, config.steps, c.max_steps),
  }
  rows, fns = [], {}
  for name, build in candidates.items():
    row = {"name": name, "batch": config.batch, "steps_per_s": float("nan"),
           "baseline": None if name == "sokoban/jumanji" else "sokoban/jumanji"}
    try:  # a peer that cannot run is reported with its exact error, not dropped
      fn = build()
      jax.block_until_ready(fn(key))
      fns[name] = fn
    except Exception as e:  # noqa: BLE001
      row["error"] = f"{type(e).__name__}: {e}"[:300]
    rows.append(row)
  fill_rates(rows, rollout_rates(fns, key, timer, config.batch * config.steps))
  return rows


def _add_ratios(rows: list[dict]) -> None:
  """ratio = median steps/s over the baseline row's median; ratio_min/max over the rounds (from
  the rows' `per_round` rates, which are then dropped)."""
  by_name = {r["name"]: r for r in rows}
  for r in rows:
    base = by_name.get(r.get("baseline") or "")
    ok = base is not None and np.isfinite(base["steps_per_s"]) and base["steps_per_s"] > 0
    r["ratio"] = r["steps_per_s"] / base["steps_per_s"] if ok else float("nan")
    if ok and "per_round" in r and "per_round" in base:
      per_round = [a / b for a, b in zip(r["per_round"], base["per_round"])]
      r["ratio_min"], r["ratio_max"] = min(per_round), max(per_round)
  for r in rows:
    r.pop("per_round", None)


def run(config, workdir):
  rows, notes = [], []
  timer = Rounds(config.rounds, warmup=1)
  for section, module_name, fn_name in SECTIONS:
    if section not in config.sections:
      continue
    try:
      module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
      if e.name != module_name:
        raise
      notes.append(f"section {section}: {module_name} not present, skipped")
      continue
    for row in getattr(module, fn_name)(config, timer):
      rows.append({"section": section, "steps_per_s": float("nan"), "baseline": None, **row})
  _add_ratios(rows)
  writer = tb.writer(workdir)
  lines = [f"{'section':<10} {'name':<42} {'steps/s':>14} {'baseline':<32} {'ratio':>8}"]
  for i, r in enumerate(rows):
    baseline = r.get("baseline") or "–"       # the baseline's own row has no ratio
    ratio = f"{r['ratio']:>8.2f}" if r.get("ratio") == r.get("ratio") and r.get("ratio") is not None \
        else f"{'–':>8}"
    lines.append(f"{r['section']:<10} {r['name']:<42} {r['steps_per_s']:>14,.0f} "
                 f"{baseline:<32} {ratio}" + (f"  ERROR {r['error']}" if "error" in r else ""))
    if np.isfinite(r["steps_per_s"]):
      writer.add_scalar(f"bench/{r['name']}/steps_per_s", r["steps_per_s"], 0)
  table = "\n".join(lines + notes)
  print(table, flush=True)
  logging.info("bench_envs:\n%s", table)
  machine = timer.machine()
  summary = {"batch": config.batch, "steps": config.steps, "backend": jax.default_backend(),
             "devices": str(jax.devices()), "notes": notes, "noisy": machine["noisy"],
             "ratios": {r["name"]: timer.headline(r["ratio"]) for r in rows
                        if r.get("baseline")},
             "machine": machine}
  print(timer.note(), flush=True)
  write_summary(workdir, summary, rows, title="Environment throughput (steps/s)",
                notes=f"batch {config.batch}, {config.steps} scan steps; steps/s is the median "
                      f"over rounds; backend {jax.default_backend()}. {timer.note()} "
                      + " ".join(notes))
  return summary
