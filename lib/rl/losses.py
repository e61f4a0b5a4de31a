"""GRPO: group-relative advantages (and their within-group permutation, the PERM control) and
the clipped policy-gradient loss with a k3 KL term.

Pure functions in the optax-losses style: arrays in, arrays out, every knob a keyword. The
trainer that samples groups, scores them and applies these losses lives in `lib/rl/grpo.py`.

Shapes: B sequences (prompts x group size, flattened), T response tokens.
"""
import jax
import jax.numpy as jnp

AGGREGATIONS = ("token-mean", "seq-mean-token-mean", "seq-mean-token-sum")


def group_advantages(rewards: jax.Array, eps: float = 1e-6, scale: bool = True) -> jax.Array:
  """Group-normalised advantages.

      A[b, g] = (r[b, g] - mean_g r[b]) / (std_g r[b] + eps)        (scale=True)
      A[b, g] =  r[b, g] - mean_g r[b]                               (scale=False)

  `std` uses ddof=1 (the unbiased estimate, as verl and TRL compute it), so a group needs at
  least two members when `scale=True`. A group whose rewards are all equal gets A = 0.

  Args:
    rewards: [B, G] float, B prompts with G sampled responses each.
    eps: added to the std in the denominator.
    scale: divide by the group std (GRPO) or only centre (Dr. GRPO style).
  Returns:
    [B, G] float32 advantages.
  """
  rewards = jnp.asarray(rewards, jnp.float32)
  if rewards.ndim != 2:
    raise ValueError(f"rewards must be [B, G]; got shape {rewards.shape}")
  centred = rewards - rewards.mean(axis=1, keepdims=True)
  if not scale:
    return centred
  if rewards.shape[1] < 2:
    raise ValueError("scale=True needs a group size G >= 2 (std with ddof=1)")
  std = rewards.std(axis=1, ddof=1, keepdims=True)
  return centred / (std + eps)


def permute_within_group(x: jax.Array, key: jax.Array) -> jax.Array:
  """Independently permutes each row of `x` [B, G] (each group's scores or advantages): the
  multiset of every group is kept, the response-to-score link is broken (GT-PERM / MIS-PERM).

  Args:
    x: [B, G] array, any dtype.
    key: PRNG key.
  Returns:
    [B, G] array of x's dtype, each row an independent permutation of the same row of x.
  """
  if x.ndim != 2:
    raise ValueError(f"x must be [B, G]; got shape {x.shape}")
  return jax.random.permutation(key, x, axis=1, independent=True)


def masked_aggregate(x: jax.Array, mask: jax.Array, agg: str = "token-mean") -> jax.Array:
  """Reduces per-token values [B, T] to a scalar over the valid tokens of `mask`.

  token-mean:          sum_{b,t} m x / sum_{b,t} m
  seq-mean-token-mean: mean over sequences with >= 1 valid token of (sum_t m x / sum_t m)
  seq-mean-token-sum:  mean over sequences with >= 1 valid token of  sum_t m x
  Invalid tokens are selected away with `where`, so they contribute exactly zero gradient.

  Args:
    x: [B, T] float per-token values (e.g. the per-token policy-gradient loss).
    mask: [B, T] bool or 0/1, non-zero where the token counts.
    agg: one of AGGREGATIONS.
  Returns:
    scalar; 0 when no token is valid.
  """
  if agg not in AGGREGATIONS:
    raise ValueError(f"unknown agg {agg!r}; valid: {AGGREGATIONS}")
  mask = mask.astype(bool)
  x = jnp.where(mask, x, 0.0)
  n_tok = mask.sum(axis=-1).astype(jnp.float32)
  if agg == "token-mean":
    return x.sum() / jnp.maximum(n_tok.sum(), 1.0)
  per_seq = x.sum(axis=-1)
  if agg == "seq-mean-token-mean":
    per_seq = per_seq / jnp.maximum(n_tok, 1.0)
  has_tok = n_tok > 0
  return jnp.where(has_tok, per_seq, 0.0).sum() / jnp.maximum(has_tok.sum(), 1)


def k3_kl(logp: jax.Array, ref_logp: jax.Array) -> jax.Array:
  """Per-token k3 estimate of KL(pi || pi_ref) (verl's `low_var_kl`).

      d  = clip(ref_logp - logp, -20, 20)
      kl = clip(exp(d) - d - 1, -10, 10)

  Non-negative; before the clamps an unbiased estimate for tokens sampled from pi.

  Args:
    logp: [B, T] float32 log-probs of the sampled tokens under pi (any shape: elementwise).
    ref_logp: [B, T] float32 log-probs of the same tokens under pi_ref.
  Returns:
    [B, T] per-token estimates in [0, 10].
  """
  d = jnp.clip(ref_logp - logp, -20.0, 20.0)
  return jnp.clip(jnp.exp(d) - d - 1.0, -10.0, 10.0)


def token_entropy(logits: jax.Array) -> jax.Array:
  """Entropy of softmax(logits) over the last axis, in nats.

      H = -sum_v p_v log p_v,   p = softmax(logits)

  Args:
    logits: [..., V] float logits (e.g. [B, T, V]; any float dtype, computed in float32).
  Returns:
    [...] float32 entropies.
  """
  logp = jax.nn.log_softmax(logits.astype(jnp.float32), axis=-1)
  return -(jnp.exp(logp) * logp).sum(axis=-1)


def grpo_loss(logp: jax.Array, old_logp: jax.Array, ref_logp: jax.Array,
              advantages: jax.Array, mask: jax.Array, clip_eps: float = 0.2,
              dual_clip_c: float | None = 3.0, kl_coef: float = 0.01,
              entropy: jax.Array | None = None, entropy_coef: float = 0.0,
              agg: str = "token-mean") -> tuple[jax.Array, dict]:
  """PPO-clip objective with dual clip and a k3 KL penalty, as GRPO uses it.

      ratio = exp(clip(logp - old_logp, -20, 20))
      pg    = max(-A ratio, -A clip(ratio, 1 - clip_eps, 1 + clip_eps))
      pg    = min(pg, -A c)                       where A < 0 (dual clip, c = dual_clip_c)
      kl    = k3_kl(logp, ref_logp)
      loss  = agg(pg) + kl_coef agg(kl) - entropy_coef agg(entropy)

  Args:
    logp, old_logp, ref_logp: [B, T] log-probabilities of the sampled tokens under the current,
      the sampling and the frozen reference policy (old and ref are treated as constants).
    advantages: [B] (one per sequence) or [B, T] float.
    mask: [B, T], 1 on response tokens that count.
    clip_eps: PPO clip range of the ratio.
    dual_clip_c: > 1, or None to disable the dual clip.
    kl_coef: weight of the k3 KL term (0 drops it).
    entropy: optional [B, T] per-token entropy of the current policy.
    entropy_coef: weight of the entropy bonus (used only when `entropy` is given).
    agg: "token-mean" | "seq-mean-token-mean" | "seq-mean-token-sum" (see `masked_aggregate`).
  Returns:
    (scalar loss, metrics) with metrics clip_frac (tokens where the clip is active), dual_clip_frac,
    approx_kl (mean of old_logp - logp, the policy drift), ref_kl (mean k3 to the reference),
    ratio_mean, pg_loss and, when given, entropy — all token means over the mask.
  """
  if dual_clip_c is not None and dual_clip_c <= 1.0:
    raise ValueError(f"dual_clip_c must be > 1 (or None); got {dual_clip_c}")
  mask = mask.astype(bool)
  old_logp = jax.lax.stop_gradient(old_logp)
  ref_logp = jax.lax.stop_gradient(ref_logp)
  adv = jax.lax.stop_gradient(jnp.asarray(advantages, jnp.float32))
  if adv.ndim == 1:
    adv = adv[:, None]
  adv = jnp.broadcast_to(adv, logp.shape)

  log_ratio = jnp.clip(logp - old_logp, -20.0, 20.0)
  ratio = jnp.exp(log_ratio)
  pg_unclipped = -adv * ratio
  pg_clipped = -adv * jnp.clip(ratio, 1.0 - clip_eps, 1.0 + clip_eps)
  pg = jnp.maximum(pg_unclipped, pg_clipped)
  dual_active = jnp.zeros_like(mask)
  if dual_clip_c is not None:
    dual_bound = -adv * dual_clip_c
    dual_active = (adv < 0) & (pg > dual_bound)
    pg = jnp.where(adv < 0, jnp.minimum(pg, dual_bound), pg)
  kl = k3_kl(logp, ref_logp)

  pg_loss = masked_aggregate(pg, mask, agg)
  loss = pg_loss
  if kl_coef:
    loss = loss + kl_coef * masked_aggregate(kl, mask, agg)
  if entropy is not None and entropy_coef:
    loss = loss - entropy_coef * masked_aggregate(entropy, mask, agg)

  mean = lambda v: jax.lax.stop_gradient(masked_aggregate(v, mask, "token-mean"))
  metrics = {
      "pg_loss": jax.lax.stop_gradient(pg_loss),
      "clip_frac": mean((pg_clipped > pg_unclipped).astype(jnp.float32)),
      "dual_clip_frac": mean(dual_active.astype(jnp.float32)),
      "approx_kl": mean(old_logp - logp),
      "ref_kl": mean(kl),
      "ratio_mean": mean(ratio),
  }
  if entropy is not None:
    metrics["entropy"] = mean(entropy)
  return loss, metrics
