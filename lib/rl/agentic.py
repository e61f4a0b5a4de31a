"""Episode-level GRPO (and GiGPO) on multi-turn episodes: the typed episode record, returns,
advantages, the token-in/token-out batch and the update.

An *episode* is one play of a host-loop env from an initial state; G episodes of the same initial
state (same env seed) form a *group*. Every model call of an episode is a `Turn`: the prompt token
ids exactly as the model saw them, the sampled response ids and their sampling log-probs, the
observation the call answered (GiGPO's anchor) and the env step it led to. Nothing is
detokenized or retokenized between rollout and update: `batch` lays the turns' own ids out as
[prompt | response] rows whose loss mask covers the response only, so prompt and env text carry
no loss.

    eps = lib.hostloop.rollouts.episodes(rows, cfg)          # host-loop rows -> Episodes
    adv = turn_advantages(eps, cfg)                          # one advantage per turn
    data = batch(eps, adv, pad_id, response_len=cfg.turn_tokens)
    metrics = trainer.update(data, key)

The update is GRPO's (`lib.rl.grpo.make_grpo_step`: clip, dual clip, k3 KL to a frozen
reference, entropy, token-mean) on the per-turn rows; `lib.rl.loop.train` drives iterations.
"""
import dataclasses
from typing import Any, ClassVar, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from lib.generate import sampling
from lib.rl import grpo, losses as rl, trainer as rl_trainer
from lib.run.config_blocks import ConfigBlock
from lib.train.state import ApplyFn, TrainState

REWARDS = ("return", "success")
OLD_LOGP = ("sampler", "recompute")


@dataclasses.dataclass(frozen=True)
class AgenticConfig(ConfigBlock):
  """The multi-turn settings (`agentic` block); the loss knobs stay in the `grpo` block
  (`lib.rl.grpo.GRPOConfig`, whose `group_size` is G episodes per initial state).

  reward: "return" (the env's per-step rewards, discounted by gamma) or "success" (1 / 0).
  gamma: discount of the episode return and of GiGPO's step returns.
  omega: weight of GiGPO's step-level advantage (0: episode-level GRPO only).
  turn_tokens: token cap of one model reply (the response width N of every row).
  minibatch_rows: turns per optimizer step (0: every turn of the iteration in one step).
  old_logp: "sampler" (the sampler's own log-probs of the sampled tokens; needs temperature 1)
    or "recompute" (a forward pass before the update), used when the update is not on-policy.
  """
  block_name: ClassVar[str] = "agentic"
  reward: str = "return"
  gamma: float = 1.0
  omega: float = 0.0
  turn_tokens: int = 32
  minibatch_rows: int = 0
  old_logp: str = "sampler"
  step_adv_scale: bool = True

  def __post_init__(self):
    if self.reward not in REWARDS:
      raise ValueError(f"agentic.reward={self.reward!r}; valid: {', '.join(REWARDS)}")
    if self.old_logp not in OLD_LOGP:
      raise ValueError(f"agentic.old_logp={self.old_logp!r}; valid: {', '.join(OLD_LOGP)}")
    if not 0.0 < self.gamma <= 1.0 or self.omega < 0 or self.turn_tokens < 1:
      raise ValueError("need 0 < gamma <= 1, omega >= 0 and turn_tokens >= 1")


@dataclasses.dataclass(frozen=True)
class Turn:
  """One model call of an episode, token in / token out.

  prompt_ids: the prompt ids exactly as the sampler saw them. response_ids, logprobs: the kept
  sampled ids and their sampling log-probs (same length). anchor: the observation text the call
  answered (None: no text, never grouped by GiGPO). step: index of the env step this call's reply led to (== the episode's number of
  steps when it led to none, e.g. the call that ran out of budget)."""
  prompt_ids: tuple[int, ...]
  response_ids: tuple[int, ...]
  logprobs: tuple[float, ...]
  anchor: str | None
  step: int


@dataclasses.dataclass(frozen=True)
class Episode:
  """One played episode: its group (initial state) and member index, its turns, the env reward of
  every step (rewards[t] follows action t), success and the host loop's status."""
  group: int
  member: int
  turns: tuple[Turn, ...]
  rewards: tuple[float, ...]
  success: bool
  status: str


def discounted_returns(rewards: Sequence[float], gamma: float) -> np.ndarray:
  """Reward-to-go of every step.

      R_t = sum_{k >= t} gamma^(k - t) r_k          (R has one extra entry R_T = 0)

  Args:
    rewards: [T] per-step rewards.
    gamma: discount in (0, 1].
  Returns:
    [T + 1] float64 returns; R_0 is the episode's discounted return.
  """
  out = np.zeros(len(rewards) + 1)
  for t in range(len(rewards) - 1, -1, -1):
    out[t] = rewards[t] + gamma * out[t + 1]
  return out


def episode_score(ep: Episode, cfg: AgenticConfig) -> float:
  """The episode-level reward: R_0 (cfg.reward "return") or 1 / 0 for success ("success")."""
  if cfg.reward == "success":
    return float(ep.success)
  return float(discounted_returns(ep.rewards, cfg.gamma)[0])


def _normalise(x: np.ndarray, eps: float, scale: bool) -> np.ndarray:
  """`lib.rl.losses.group_advantages` of one ragged group; a group of one gets 0."""
  if len(x) < 2:
    return np.zeros(len(x))
  return np.asarray(rl.group_advantages(x[None], eps=eps, scale=scale))[0].astype(np.float64)


def episode_advantages(episodes: Sequence[Episode], cfg: AgenticConfig, eps: float = 1e-6,
                       scale: bool = True) -> np.ndarray:
  """GRPO's group-normalised advantage of each episode, within its group (ragged after drops).

      A^E_i = (R_i - mean_{j in g(i)} R_j) / (std_{j in g(i)} R_j + eps)   (std: ddof = 1)

  A group with one surviving episode gets A^E = 0 (no baseline to compare with).

  Args:
    episodes: the iteration's kept episodes.
    cfg: reward kind and gamma.
    eps, scale: as `lib.rl.losses.group_advantages`.
  Returns:
    [len(episodes)] float64.
  """
  scores = np.array([episode_score(e, cfg) for e in episodes], np.float64)
  out = np.zeros(len(episodes))
  groups = np.array([e.group for e in episodes])
  for g in np.unique(groups):
    idx = np.flatnonzero(groups == g)
    out[idx] = _normalise(scores[idx], eps, scale)
  return out


def step_groups(episodes: Sequence[Episode]) -> dict[tuple[int, str], list[tuple[int, int]]]:
  """GiGPO's anchor-state groups: within each episode group, the (episode index, step) pairs
  whose step started from the same observation text.

  Args:
    episodes: the iteration's kept episodes.
  Returns:
    {(group, anchor): [(episode index, step), ...]} over every step that had an action and a
    text anchor; a step's anchor is that of its first turn.
  """
  out: dict[tuple[int, str], list[tuple[int, int]]] = {}
  for i, ep in enumerate(episodes):
    seen = set()
    for turn in ep.turns:
      if turn.step < len(ep.rewards) and turn.step not in seen:
        seen.add(turn.step)
        if turn.anchor is not None:
          out.setdefault((ep.group, turn.anchor), []).append((i, turn.step))
  return out


def step_advantages(episodes: Sequence[Episode], cfg: AgenticConfig,
                    eps: float = 1e-6) -> list[np.ndarray]:
  """GiGPO's step-level advantage of every step, normalised within its anchor-state group.

      A^S(i, t) = (R^i_t - mean_{(j, u) in G(s)} R^j_u) / (std_{G(s)} R + eps)
      G(s) = the steps of the same episode group whose anchor observation is s

  with R^i_t the discounted reward-to-go from step t (`discounted_returns`; with reward
  "success" the only reward is the success flag at the last step). A step alone in its group
  gets 0. `cfg.step_adv_scale=False` only centres.

  Args:
    episodes: the iteration's kept episodes.
    cfg: gamma, reward kind, step_adv_scale.
    eps: added to the std.
  Returns:
    per episode, [T_i] float64 step advantages.
  """
  rets = []
  for ep in episodes:
    r = list(ep.rewards)
    if cfg.reward == "success" and r:
      r = [0.0] * (len(r) - 1) + [float(ep.success)]
    rets.append(discounted_returns(r, cfg.gamma))
  out = [np.zeros(len(ep.rewards)) for ep in episodes]
  for members in step_groups(episodes).values():
    vals = np.array([rets[i][t] for i, t in members])
    for (i, t), a in zip(members, _normalise(vals, eps, cfg.step_adv_scale)):
      out[i][t] = a
  return out


def turn_advantages(episodes: Sequence[Episode], cfg: AgenticConfig, eps: float = 1e-6,
                    scale: bool = True) -> list[np.ndarray]:
  """The advantage of every turn: the episode's, plus omega times its step's (GiGPO).

      A(i, turn) = A^E_i + omega A^S(i, step(turn))      (a turn with no step: A^E_i only)

  Args:
    episodes: the iteration's kept episodes.
    cfg: reward, gamma, omega.
    eps, scale: of the episode-level normalisation (`episode_advantages`).
  Returns:
    per episode, [turns] float64 advantages (broadcast to every response token by the loss).
  """
  a_ep = episode_advantages(episodes, cfg, eps, scale)
  a_st = step_advantages(episodes, cfg, eps) if cfg.omega else None
  out = []
  for i, ep in enumerate(episodes):
    adv = np.full(len(ep.turns), a_ep[i])
    if a_st is not None:
      adv += cfg.omega * np.array([a_st[i][t.step] if t.step < len(ep.rewards) else 0.0
                                   for t in ep.turns])
    out.append(adv)
  return out


def batch(episodes: Sequence[Episode], advantages: Sequence[np.ndarray], pad_id: int,
          response_len: int, rows_multiple: int = 1) -> dict[str, np.ndarray]:
  """Every turn as one [prompt | response] row, the turns' own token ids (token-in/token-out).

  Prompts are left-padded to P = `sampling.bucket_length(longest prompt)`, responses
  right-padded to N = `response_len`; rows are padded with dead rows (no response token,
  advantage 0) to a multiple of `rows_multiple` (the update's micro-batch or minibatch), or
  with `rows_multiple=1` to a power of two, so iterations share a few compiled programs. response_mask is 1 on each turn's own response tokens only: the
  prompt (system text, env observations, earlier turns) and the padding carry no loss.

  Args:
    episodes: the kept episodes; advantages: per episode, one per turn (`turn_advantages`).
    pad_id: token id of the padding.
    response_len: N (the per-turn token cap; longer responses raise).
    rows_multiple: > 1: the row count is rounded up to a multiple of it; 1: to a power of two.
  Returns:
    {input_ids, attention_mask [R, P + N] int32; response_mask [R, N] int32; sample_logp [R, N]
    float32 (0 off the mask); advantages [R] float32; episode, turn [R] int32 (-1 on dead rows)}.
  """
  turns = [(i, j, t) for i, ep in enumerate(episodes) for j, t in enumerate(ep.turns)]
  if not turns:
    raise ValueError("no turns to train on (every episode was dropped or made no call)")
  longest = max(len(t.response_ids) for _, _, t in turns)
  if longest > response_len:
    raise ValueError(f"a response of {longest} tokens exceeds the turn cap {response_len}")
  p = sampling.bucket_length(max(len(t.prompt_ids) for _, _, t in turns))
  rows = (-(-len(turns) // rows_multiple) * rows_multiple if rows_multiple > 1
          else sampling.bucket_length(len(turns), minimum=1))
  ids = np.full((rows, p + response_len), pad_id, np.int32)
  mask = np.zeros((rows, p + response_len), np.int32)
  resp = np.zeros((rows, response_len), np.int32)
  logp = np.zeros((rows, response_len), np.float32)
  adv = np.zeros((rows,), np.float32)
  which = np.full((rows, 2), -1, np.int32)
  for r, (i, j, t) in enumerate(turns):
    n_p, n_r = len(t.prompt_ids), len(t.response_ids)
    ids[r, p - n_p:p] = t.prompt_ids
    ids[r, p:p + n_r] = t.response_ids
    mask[r, p - n_p:p + n_r] = 1
    resp[r, :n_r] = 1
    logp[r, :n_r] = t.logprobs
    adv[r] = advantages[i][j]
    which[r] = (i, j)
  return {"input_ids": ids, "attention_mask": mask, "response_mask": resp, "sample_logp": logp,
          "advantages": adv, "episode": which[:, 0], "turn": which[:, 1]}


def _score(apply_fn: ApplyFn, params: Any, ref_params: Any, input_ids: jax.Array,
           attention_mask: jax.Array, n: int, temperature: float, with_old: bool,
           micro_rows: int) -> tuple[jax.Array | None, jax.Array]:
  """`lib.rl.grpo.rollout_logprobs` (the sampling policy's, optionally, and the reference's
  log-probs of the response tokens), its static arguments in a fixed order for `jax.jit`."""
  return grpo.rollout_logprobs(apply_fn, params, ref_params, input_ids, attention_mask, n,
                               temperature, with_old=with_old, micro_rows=micro_rows)


class AgenticTrainer(rl_trainer.RLTrainer):
  """GRPO's update on per-turn rows: the frozen reference (the initial model), the update step
  of `lib.rl.grpo.make_grpo_step` jitted once per accumulation count, minibatches of
  `AgenticConfig.minibatch_rows` turns. The rollout is the caller's (`lib.hostloop.rollouts`),
  sampling with `trainer.state.params`: the current weights, no checkpoint round trip.
  """
  kind = "agentic"
  make_step = staticmethod(grpo.make_grpo_step)

  @staticmethod
  def minibatch_rows(cfg: grpo.GRPOConfig, rows: int) -> int:
    """Rows of one optimizer step: all of them (the agentic minibatch is set per update)."""
    del cfg
    return rows

  def __init__(self, apply_fn: ApplyFn, state: TrainState, tx, cfg: grpo.GRPOConfig,
               agentic: AgenticConfig, ref_params: Any = None):
    super().__init__(apply_fn, None, state, tx, cfg)
    self.agentic = agentic
    self.ref_params = self.frozen_copy(ref_params)
    self._logprobs = jax.jit(_score, static_argnums=(0, 5, 6, 7, 8))

  def update(self, data: dict[str, np.ndarray], key: jax.Array) -> dict[str, float]:
    """`update_epochs` passes of optimizer steps over shuffled minibatches of turns.

    On-policy (one epoch, one minibatch) the step reads its own log-probs as old_logp; otherwise
    old_logp is the sampler's (`old_logp="sampler"`, token-in/token-out) or a fresh forward
    ("recompute"). The reference log-probs come from one pass before the first step.

    Args:
      data: `batch(...)` output; its row count must split into minibatches.
      key: shuffles the rows of each epoch.
    Returns:
      The step metrics (`lib.rl.losses.grpo_loss`'s, loss, grad_norm) averaged over steps, plus
      logp_gap: mean |sampler log-prob - recomputed log-prob| (only when recomputed).
    """
    cfg, ag = self.cfg, self.agentic
    rows = data["input_ids"].shape[0]
    mb = ag.minibatch_rows or rows
    if rows % mb:
      raise ValueError(f"{rows} rows do not split into minibatches of {mb}")
    micro = min(cfg.micro_batch, mb) if cfg.micro_batch else mb
    if mb % micro:
      raise ValueError(f"minibatch of {mb} rows does not split into micro-batches of {micro}")
    n = data["response_mask"].shape[1]
    dev = {k: jnp.asarray(data[k]) for k in ("input_ids", "attention_mask", "response_mask")}
    on_policy = cfg.update_epochs == 1 and mb == rows
    recompute = not on_policy and ag.old_logp == "recompute"
    if not on_policy and ag.old_logp == "sampler" and cfg.temperature != 1.0:
      raise ValueError("old_logp='sampler' needs temperature 1 (the sampler's log-probs are of "
                       "the raw logits); use old_logp='recompute'")
    old, ref = self._logprobs(self.apply_fn, self.state.params, self.ref_params,
                              dev["input_ids"], dev["attention_mask"], n, cfg.temperature,
                              recompute, micro)
    extra = {}
    if not on_policy:
      extra["old_logp"] = old if recompute else jnp.asarray(data["sample_logp"])
    full = {**dev, "ref_logp": ref, "advantages": jnp.asarray(data["advantages"]), **extra}
    gap = None
    if recompute:
      m = data["response_mask"].astype(bool)
      gap = float(np.abs(np.asarray(old) - data["sample_logp"])[m].mean()) if m.any() else None
    step = self._update(mb // micro)
    metrics = []
    for epoch in range(cfg.update_epochs):
      order = np.asarray(jax.random.permutation(jax.random.fold_in(key, epoch), rows))
      for start in range(0, rows, mb):
        idx = order[start:start + mb]
        self.state, m = step(self.state, jax.tree.map(lambda x: x[idx], full))
        metrics.append(m)
    out = {k: float(np.mean([float(m[k]) for m in metrics])) for k in metrics[0]}
    if gap is not None:
      out["logp_gap"] = gap
    return out
