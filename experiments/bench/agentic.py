"""Benchmark: the agentic rollout loop, batched vs one episode at a time (configs/bench/agentic.py).

The rollout phase of one iteration of the multi-turn GRPO / GiGPO study (experiments/agentic/
babyai.py): `rollouts.collect` of `group_jobs` (G episodes per BabyAI SOURCE level, ConPAct's
ReAct agent) through a `PolicyBackend`, temperature 1, the study's reply cap. Two modes play the
same episodes from the same seeds:
  batched            every live episode's request in one sampler call per step (max_batch = the
                     number of episodes), as the study runs it
  one at a time      the baseline: max_live = max_batch = 1, one sampler call per model call, the
                     way a per-episode agent loop would call the model
The backend's PRNG key of a request is a function of its episode and call index only (HostLoop
`request_seed`, folded into the backend's root), so both modes sample the same tokens; the run
checks that every episode's prompt and reply ids are the same in both (`identical_episodes`), and
reports the largest difference of their sampling log-probs (batch shape changes the float
reductions, not the samples).

Both modes run once untimed on the same jobs first (that is the warm-up: every shape the timed
rounds see compiles there), then `rounds` interleaved timed rounds (`lib.bench.rounds`); each
round plays the episodes into a fresh results file (a resumed log would skip them). Reported per
mode: episodes/s and generated tokens/s (the reply ids recorded in the transcripts, EOS included,
per wall second of `collect`) as medians with their min-max over rounds, model calls and sampler
calls; the ratio batched / one at a time and its range over rounds; the load average before and
after and the machine state. No headline ratio on a noisy run (load above one per core).
"""
import functools
import itertools
import os
import time

from absl import logging
from flax import nnx

from agents.conpact import demonstrations, textenv
from agents.conpact.base import AgentConfig
from agents.conpact.learned import rows as study_rows
from agents.conpact.learned.tokenizer import train_conpact_tokenizer
from agents.conpact.react import ReActAgent
from envs.minigrid import text as minigrid_text
from lib.bench.rounds import Rounds
from lib.hostloop import rollouts
from lib.hostloop.executor_factory import make_executor
from lib.hostloop.loop import HostLoop
from lib.models import model_setup
from lib.run import tb
from lib.run.results import write_summary

BASELINE = "one at a time"
BATCHED = "batched"


def make_agent(turn_tokens: int, temperature: float) -> ReActAgent:
  """The study's ReAct actor (the prompt its ReAct demonstration rows were rendered in)."""
  return ReActAgent(textenv.MINIGRID_TASK,
                    AgentConfig(actor_max_tokens=turn_tokens, temperature=temperature))


def jobs(config) -> list:
  """G episodes of each of `groups_per_task` SOURCE levels of every task, groups numbered across
  tasks (as the study's iterations draw them, here the first levels of the source split)."""
  agent = functools.partial(make_agent, config.turn_tokens, config.temperature)
  seeds = list(textenv.MINIGRID_SOURCE_SEEDS)[:config.groups_per_task]
  out = []
  for task in config.tasks:
    first = len(out) // config.group_size
    for job in rollouts.group_jobs(seeds, config.group_size,
                                   functools.partial(minigrid_text.text_env, task), agent):
      job.key["group"] += first
      job.extra.update(task=task)
      out.append(job)
  return out


def build_actor(config, workdir):
  """ConPAct's BPE on expert ReAct rows of the tasks, and the study's model shape on it with
  random weights. Returns (model, tokenizer)."""
  rows = []
  for task in config.tasks:
    rows += demonstrations.actor_rows(task, config.data.demos, 0.0, config.data.seed, react=True)
  tok = train_conpact_tokenizer(study_rows.corpus(rows), config.model.vocab_size,
                                os.path.join(workdir, "tokenizer"))
  model, _, tok = model_setup.build_model(config.model, seed=config.seed, tokenizer=tok)
  return model, tok


def actor_name(config) -> str:
  if config.model.checkpoint:
    return f"the checkpoint {config.model.checkpoint}"
  return ("the study's tiny Qwen3 shape with random weights (no SFT: throughput depends on "
          "shapes and episode lengths, not on what the weights say)")


def fingerprint(rows: list[dict]) -> dict:
  """{(group, member): (status, actions, [(prompt ids, reply ids) per call])}: what must be the
  same in both modes (timings and float log-probs aside; a failed call has no ids)."""
  return {(r["group"], r["member"]): (
      r["status"], r["actions"],
      [(tuple(e.get("prompt_ids", ())), tuple(e.get("token_ids", ()))) for e in r["transcript"]
       if e["type"] == "call"]) for r in rows}


def max_logprob_diff(a: list[dict], b: list[dict]) -> float | None:
  """The largest |log-prob difference| of the same sampled token in two runs (None: no token)."""
  def logps(rows):
    return {(r["group"], r["member"], i): e.get("logprobs", ()) for r in rows
            for i, e in enumerate(x for x in r["transcript"] if x["type"] == "call")}
  la, lb = logps(a), logps(b)
  diffs = [abs(x - y) for k in la.keys() & lb.keys() for x, y in zip(la[k], lb[k])]
  return max(diffs) if diffs else None


def counts(rows: list[dict], sampler_calls: int) -> dict:
  """A run's work: episodes, model calls, generated (reply) tokens, actions, sampler calls."""
  calls = [e for r in rows for e in r["transcript"] if e["type"] == "call"]
  return {"episodes": len(rows), "model_calls": len(calls),
          "generated_tokens": sum(len(e.get("token_ids", ())) for e in calls),
          "env_actions": sum(r["actions"] for r in rows), "sampler_calls": sampler_calls,
          "dropped": sum(r["status"] in rollouts.DROPPED for r in rows),
          "successes": sum(bool(r["success"]) for r in rows)}


def run(config, workdir):
  """Builds the random actor, plays the episodes in both modes (warm-up, then interleaved timed
  rounds) and writes summary.json / summary.md; returns the summary."""
  t0 = time.perf_counter()
  model, tok = build_actor(config, workdir)
  params = nnx.state(model, nnx.Param)
  work = jobs(config)
  n = len(work)
  modes = {BASELINE: 1, BATCHED: n}   # mode -> max_live = the backend's max_batch
  backends = {m: rollouts.PolicyBackend(model, tok, lambda: params,
                                        turn_tokens=config.turn_tokens, seed=config.seed,
                                        max_batch=b) for m, b in modes.items()}
  # one env executor per mode, kept across its runs (worker processes start once, as in the
  # study); HostLoop closes its executor after every run, KeptExecutor ignores that
  executors = {m: rollouts.KeptExecutor(lambda: make_executor(config.host)) for m in modes}
  last, counter, per_round = {}, itertools.count(), {m: [] for m in modes}

  def play(mode: str, name: str) -> None:
    loop = HostLoop(backends[mode], action_budget=config.budget, call_budget=config.budget,
                    max_live=modes[mode], seed=config.seed, show_progress=False,
                    executor=executors[mode])
    _, _, rows = rollouts.collect(loop, work, os.path.join(workdir, "rollouts"), name)
    last[mode] = (rows, loop.steps)

  def side(mode: str):
    tag = "batched" if mode == BATCHED else "one"

    def call():   # a fresh results file per call: a resumed log would skip every episode
      play(mode, f"{tag}_{next(counter)}.jsonl")
      per_round[mode].append(counts(*last[mode]))
    return call

  setup_s = time.perf_counter() - t0
  warmup_s = {}
  try:
    for mode in modes:   # untimed: compiles every shape the rounds see (same jobs, same seeds)
      t1 = time.perf_counter()
      play(mode, f"warmup_{'batched' if mode == BATCHED else 'one'}.jsonl")
      warmup_s[mode] = round(time.perf_counter() - t1, 2)
    load_before = list(os.getloadavg())
    timer = Rounds(config.rounds, warmup=0)   # the untimed runs above are the warm-up
    t = timer.time({m: side(m) for m in modes}, work=n)
    load_after = list(os.getloadavg())
  finally:
    for ex in executors.values():
      ex.shutdown()
  fa, fb = fingerprint(last[BASELINE][0]), fingerprint(last[BATCHED][0])
  differing = sum(fa.get(k) != fb.get(k) for k in fa.keys() | fb.keys())
  same = differing == 0
  table = []
  for mode in modes:
    work_done = per_round[mode][-1]
    per_s, secs = t[mode]["per_s"], t[mode]["seconds"]
    tok_rate = work_done["generated_tokens"] / n   # tokens per episode: tokens/s = ep/s x this
    cmp = Rounds.compare(t[mode], t[BASELINE])
    table.append({
        "mode": mode, "max_batch": modes[mode], **work_done,
        "same_work_every_round": all(c == work_done for c in per_round[mode]),
        "seconds": secs["median"], "episodes_per_s": per_s["median"],
        "episodes_per_s_min": per_s["min"], "episodes_per_s_max": per_s["max"],
        "tokens_per_s": per_s["median"] * tok_rate, "tokens_per_s_min": per_s["min"] * tok_rate,
        "tokens_per_s_max": per_s["max"] * tok_rate,
        "ratio": cmp["ratio"], "ratio_min": cmp["ratio_min"], "ratio_max": cmp["ratio_max"],
        "warmup_s": warmup_s[mode]})
  base, new = table
  machine = timer.machine()
  ratio = new["ratio"]
  tb.writer(workdir).add_scalar("agentic_bench/speedup", ratio, 0)
  summary = {
      "speedup_vs_one_at_a_time": timer.headline(ratio),
      "speedup_min": new["ratio_min"], "speedup_max": new["ratio_max"],
      "tokens_per_s_ratio": timer.headline(new["tokens_per_s"] / base["tokens_per_s"]),
      "baseline": BASELINE, "identical_episodes": same, "differing_episodes": differing,
      "max_logprob_diff": max_logprob_diff(last[BASELINE][0], last[BATCHED][0]),
      "episodes": n, "tasks": list(config.tasks), "groups_per_task": config.groups_per_task,
      "group_size": config.group_size, "budget": config.budget,
      "turn_tokens": config.turn_tokens, "temperature": config.temperature,
      "vocab_size": len(tok), "model": actor_name(config),
      "executor": config.host.executor, "setup_s": round(setup_s, 2),
      "loadavg_before": load_before, "loadavg_after": load_after, "cpu_count": os.cpu_count(),
      "noisy": machine["noisy"], "machine": machine,
      "episodes_per_s_counts": "finished episodes per wall second of one rollouts.collect "
                               "(host loop, env steps, results log, read back)",
      "tokens_per_s_counts": "generated reply tokens (the token ids recorded per call, EOS "
                             "included) per wall second of the same collect"}
  lines = [f"{r['mode']} (max_batch {r['max_batch']}): {r['episodes_per_s']:.2f} ep/s "
           f"[{r['episodes_per_s_min']:.2f}-{r['episodes_per_s_max']:.2f}], "
           f"{r['tokens_per_s']:.0f} tok/s, {r['model_calls']} model calls in "
           f"{r['sampler_calls']} sampler calls, {r['generated_tokens']} tokens" for r in table]
  head = (f"{n} episodes ({len(config.tasks)} tasks x {config.groups_per_task} levels x G="
          f"{config.group_size}, budget {config.budget}, {config.turn_tokens}-token replies, "
          f"T={config.temperature}): batched / one at a time = {ratio:.2f}x "
          f"[{new['ratio_min']:.2f}-{new['ratio_max']:.2f}]; identical episodes: {same}; "
          f"load {load_before[0]:.2f} -> {load_after[0]:.2f} on {os.cpu_count()} cores")
  msg = f"[agentic_bench] {head}\n  " + "\n  ".join(lines) + "\n" + timer.note()
  print(msg, flush=True)
  logging.info(msg)
  notes = (f"{head}. Actor: {actor_name(config)}, ConPAct's BPE. Each "
           "mode ran once untimed first (`warmup_s`, compiles included).\n\n"
           + "".join(f"- {line}\n" for line in lines) + "\n" + timer.note())
  write_summary(workdir, summary, table, title="Agentic rollouts: batched vs one at a time",
                notes=notes, debug=config.debug, key=("mode",))
  return summary
