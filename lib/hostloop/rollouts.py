"""Host-loop episodes as token-in/token-out training samples for episode-level GRPO / GiGPO
(`lib.rl.agentic`).

    backend = PolicyBackend(model, tok, lambda: trainer.state.params, turn_tokens=32)
    loop = HostLoop(backend, action_budget=A, call_budget=C, seed=it, executor=...)
    eps, dropped = collect(loop, group_jobs(seeds, G, make_env, make_agent), rollout_dir, name)

`PolicyBackend` samples with the weights a callable returns at each call (the trainer's current
params: no checkpoint round trip) through the jitted sampler (`lib.generate.sampling.generate`),
one PRNG key per request (from the host loop's per-request seed, so a reply does not depend on
which other episodes share its batch), and answers with a `TokenCompletion`: the reply text plus
the prompt ids exactly as the sampler saw them, the kept sampled ids and their log-probs. The host
loop writes those into each call of the episode's transcript, so the rows of `results.jsonl`
carry everything the update needs and `episodes(rows)` rebuilds `lib.rl.agentic.Episode`s from
them without tokenizing anything again. A rerun of a killed iteration reuses its finished rows
(same params, same per-request seeds).

`group_jobs` makes G jobs per initial state (same env seed, key {"group", "member"}). Episodes
that end in `env_error` (a hung or dead env worker), `backend_error` or `agent_error` are dropped
from their group and counted, never raised.
"""
import os
import time
from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from lib.backends.protocol import Backend, Completion, SamplingParams, TokenCompletion
from lib.generate import sampling
from lib.hostloop.executors import EnvCall, EnvExecutor, EnvResult
from lib.hostloop.loop import EpisodeJob, HostLoop
from lib.models.tokenizer import render_chat
from lib.rl import agentic
from lib.rl.agentic import Episode, Turn
from lib.run.results import ResultsLog

DROPPED = ("env_error", "backend_error", "agent_error")
KEY = ("group", "member")


class PolicyBackend(Backend):
  """The policy being trained as a host-loop backend (token-in/token-out, current weights).

  Args:
    model: the NNX model (its graph and non-Param state; the params come from `params_fn`).
    tokenizer: its tokenizer (chat template).
    params_fn: () -> the params pytree to sample with (e.g. `lambda: trainer.state.params`).
    turn_tokens: cap on one reply's tokens (a request asking for more gets this many).
    seed: root of the per-request keys.
    max_batch: rows per sampler call.
    template_kwargs: chat-template variables.
    compute_dtype: cast floating params to it before sampling (the trainer's compute dtype).
  """

  name = "policy"

  def __init__(self, model: nnx.Module, tokenizer, params_fn: Callable[[], Any], *,
               turn_tokens: int, seed: int = 0, max_batch: int = 64,
               template_kwargs: dict | None = None, compute_dtype: Any = None):
    super().__init__()
    self.graphdef, _, self.rest = nnx.split(model, nnx.Param, ...)
    self.tokenizer, self.params_fn = tokenizer, params_fn
    self.turn_tokens, self.seed, self.max_batch = turn_tokens, seed, max_batch
    self.template_kwargs = dict(template_kwargs or {})
    self.compute_dtype = compute_dtype
    self.eos_ids = sampling.default_eos_ids(tokenizer, model.config)
    self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    self.generated_tokens = 0

  def encode(self, messages: list[dict]) -> list[int]:
    """The prompt ids of a conversation: the chat template with the assistant opener, tokenized
    without special tokens (as `lib.sft.chat_rows.encode_row` renders SFT prompts)."""
    text = render_chat(self.tokenizer, list(messages), **self.template_kwargs)
    return self.tokenizer.encode(text, add_special_tokens=False)

  def _generate(self, conversations, params):
    out: list[Completion | None] = [None] * len(conversations)
    groups: dict[tuple, list[int]] = {}
    for i, p in enumerate(params):
      n_new = min(p.max_tokens, self.turn_tokens)
      groups.setdefault((n_new, p.temperature, p.top_p, p.top_k), []).append(i)
    state = self.params_fn()
    if self.compute_dtype is not None:
      state = jax.tree.map(lambda x: x.astype(self.compute_dtype)
                           if jnp.issubdtype(x.dtype, jnp.floating) else x, state)
    state = nnx.merge_state(state, self.rest)
    for (n_new, temp, top_p, top_k), idx in groups.items():
      for lo in range(0, len(idx), self.max_batch):
        chunk = idx[lo:lo + self.max_batch]
        done = self._sample(state, [conversations[i] for i in chunk],
                            [params[i] for i in chunk], n_new, temp, top_p, top_k)
        for i, c in zip(chunk, done):
          out[i] = c
    return out

  def _sample(self, state, convs, params: Sequence[SamplingParams], n_new: int, temp: float,
              top_p: float, top_k: int) -> list[TokenCompletion]:
    encoded = [self.encode(c) for c in convs]
    rows = sampling.bucket_length(len(encoded), minimum=1)
    ids, mask = sampling.left_pad(encoded + [encoded[0]] * (rows - len(encoded)), self.pad_id)
    root = jax.random.key(self.seed)
    seeds = [p.seed if p.seed is not None else 0 for p in params]
    keys = jax.vmap(lambda s: jax.random.fold_in(root, s))(
        jnp.asarray(seeds + [0] * (rows - len(seeds)), jnp.uint32))
    out = sampling.generate(self.graphdef, state, ids, mask, keys, max_new_tokens=n_new,
                            temperature=temp, top_p=top_p, top_k=top_k, eos_ids=self.eos_ids,
                            pad_id=self.pad_id)
    tokens, logprobs, lengths = jax.device_get((out.tokens, out.logprobs, out.lengths))
    done = []
    for row, (prompt, p) in enumerate(zip(encoded, params)):
      got = tokens[row, :int(lengths[row])].tolist()
      text, kept, reason = sampling.finish_row(self.tokenizer, got, self.eos_ids, p.stop)
      self.generated_tokens += kept
      done.append(TokenCompletion(
          text=text, input_tokens=len(prompt), output_tokens=kept, finish_reason=reason,
          prompt_ids=list(prompt), token_ids=got[:kept],
          logprobs=[float(x) for x in logprobs[row, :kept]]))
    return done


class KeptExecutor:
  """An env executor kept across host-loop runs: `HostLoop(executor=kept)` closes its executor
  after every run, which would spawn new worker processes (each importing JAX and compiling its
  env) for every RL iteration and evaluation; this one ignores `close` and keeps its workers
  until `shutdown`.

  Args:
    make: () -> the executor (e.g. `lambda: executor_factory.make_executor(config.host)`),
      built on first use and again after `shutdown`.
  """

  def __init__(self, make: Callable[[], EnvExecutor]):
    self._make, self._inner = make, None

  def __call__(self) -> "KeptExecutor":
    return self

  def _get(self) -> EnvExecutor:
    if self._inner is None:
      self._inner = self._make()
    return self._inner

  @property
  def capacity(self) -> int | None:
    """The kept executor's capacity (most live episodes)."""
    return self._get().capacity

  def run(self, calls: Sequence[EnvCall]) -> list[EnvResult]:
    """The kept executor's `run`."""
    return self._get().run(calls)

  def release(self, episode: int) -> None:
    """The kept executor's `release`."""
    self._get().release(episode)

  def close(self) -> None:
    """Nothing: the workers stay for the next run (`shutdown` ends them)."""

  def shutdown(self) -> None:
    """Closes the kept executor (its workers end)."""
    if self._inner is not None:
      self._inner.close()
      self._inner = None


def group_jobs(seeds: Sequence[int], group_size: int, make_env: Callable[[], Any],
               make_agent: Callable[[], Any], extra: dict | None = None) -> list[EpisodeJob]:
  """G episodes of every initial state: group i plays env seed `seeds[i]` `group_size` times.

  Args:
    seeds: the env seeds of the groups' initial states.
    group_size: G.
    make_env, make_agent: the host loop's factories.
    extra: fields copied into every row.
  Returns:
    EpisodeJobs keyed {"group": i, "member": g}.
  """
  return [EpisodeJob(key={"group": i, "member": g}, make_env=make_env, make_agent=make_agent,
                     env_seed=int(s), extra=dict(extra or {}))
          for i, s in enumerate(seeds) for g in range(group_size)]


def episode_from_row(row: dict) -> Episode:
  """One host-loop results row -> an Episode of token-in/token-out turns.

  A call's anchor is the last observation text before it (reset or the previous action's; None
  when the env's observation is not text, so GiGPO never groups it); its step is the number of
  actions taken before it.

  Args:
    row: a results row with "group", "member", "status", "success" and the transcript.
  Returns:
    The Episode.
  Raises:
    ValueError: a successful call without token ids (a backend that is not token-in/token-out).
  """
  obs, turns, rewards = None, [], []
  for event in row["transcript"]:
    if event["type"] == "reset":
      obs = event.get("obs")
    elif event["type"] == "action":
      rewards.append(float(event["reward"]))
      obs = event.get("obs")
    elif event["type"] == "call" and event.get("error") is None:
      if "prompt_ids" not in event or not event["prompt_ids"]:
        raise ValueError(f"episode {row['group']}/{row['member']}: a call without prompt ids; "
                         "token-in/token-out training needs a PolicyBackend")
      turns.append(Turn(tuple(event["prompt_ids"]), tuple(event["token_ids"]),
                        tuple(event["logprobs"]), obs, len(rewards)))
  return Episode(int(row["group"]), int(row["member"]), tuple(turns), tuple(rewards),
                 bool(row["success"]), row["status"])


def episodes(rows: Sequence[dict]) -> tuple[list[Episode], dict[str, int]]:
  """The kept episodes of an iteration's rows and the count of dropped ones by status.

  Args:
    rows: results rows (one per episode).
  Returns:
    (episodes ordered by (group, member), {status: dropped count} for the statuses in DROPPED).
  """
  kept, dropped = [], {s: 0 for s in DROPPED}
  for row in sorted(rows, key=lambda r: (r["group"], r["member"])):
    if row["status"] in DROPPED:
      dropped[row["status"]] += 1
    else:
      kept.append(episode_from_row(row))
  return kept, dropped


def collect(loop: HostLoop, jobs: Sequence[EpisodeJob], directory: str,
            filename: str) -> tuple[list[Episode], dict[str, int], list[dict]]:
  """Runs (or finishes) an iteration's episodes into <directory>/<filename> and reads them back.

  Args:
    loop: the host loop (its backend samples with the current params).
    jobs: `group_jobs(...)`.
    directory, filename: the iteration's results log (rows keyed by group and member).
  Returns:
    (kept episodes, dropped counts by status, every row).
  """
  os.makedirs(directory, exist_ok=True)
  with ResultsLog(directory, KEY, filename=filename) as log:
    loop.run(jobs, log)
    rows = log.rows()
  kept, dropped = episodes(rows)
  return kept, dropped, rows


def train_iteration(trainer: agentic.AgenticTrainer, loop: HostLoop, jobs: Sequence[EpisodeJob],
                    directory: str, filename: str, pad_id: int, key: jax.Array) -> dict:
  """One episode-level GRPO / GiGPO iteration: collect the groups' episodes with the current
  params, advantages per turn (`lib.rl.agentic.turn_advantages`), the token-in/token-out batch
  and the update.

  Args:
    trainer: the AgenticTrainer (its `agentic` config: reward, gamma, omega, turn cap).
    loop: a host loop whose backend samples with `trainer.state.params` (`PolicyBackend`).
    jobs: `group_jobs(...)` of this iteration.
    directory, filename: the iteration's results log (`collect`).
    pad_id: the tokenizer's pad id.
    key: shuffles the update's minibatches.
  Returns:
    The update's metrics plus success, return_mean (undiscounted), score_mean (the episode
    reward used), zero_std_group_frac, episodes, dropped (and dropped_<status>), turns,
    response_len_mean / _max (tokens per reply), train_tokens (prompt + response tokens of the
    update), rollout_s, update_s, iteration_s, tokens_per_s (update tokens / update seconds).
  Raises:
    RuntimeError: every episode of the iteration was dropped.
  """
  cfg = trainer.agentic
  t0 = time.perf_counter()
  eps, dropped, _ = collect(loop, jobs, directory, filename)
  t_roll = time.perf_counter() - t0
  if not any(e.turns for e in eps):
    raise RuntimeError(f"{filename}: no episode to train on (dropped: {dropped})")
  adv = agentic.turn_advantages(eps, cfg, eps=trainer.cfg.adv_eps,
                                scale=trainer.cfg.scale_advantages)
  # rows: whole minibatches, each of whole micro-batches (`AgenticTrainer.update`)
  data = agentic.batch(eps, adv, pad_id, cfg.turn_tokens,
                       rows_multiple=cfg.minibatch_rows or trainer.cfg.micro_batch or 1)
  t1 = time.perf_counter()
  metrics = trainer.update(data, key)
  t_upd = time.perf_counter() - t1
  scores = np.array([agentic.episode_score(e, cfg) for e in eps])
  groups = {}
  for e, s in zip(eps, scores):
    groups.setdefault(e.group, []).append(s)
  lengths = [len(t.response_ids) for e in eps for t in e.turns]
  tokens = int(data["attention_mask"].sum())
  metrics.update({
      "success": float(np.mean([e.success for e in eps])),
      "return_mean": float(np.mean([sum(e.rewards) for e in eps])),
      "score_mean": float(scores.mean()),
      "zero_std_group_frac": float(np.mean([np.std(g) == 0 for g in groups.values()])),
      "episodes": len(eps), "dropped": sum(dropped.values()),
      **{f"dropped_{k}": v for k, v in dropped.items()},
      "turns": len(lengths), "response_len_mean": float(np.mean(lengths)),
      "response_len_max": float(np.max(lengths)), "train_tokens": tokens,
      "rollout_s": t_roll, "update_s": t_upd, "iteration_s": time.perf_counter() - t0,
      "tokens_per_s": tokens / max(t_upd, 1e-9)})
  return metrics
