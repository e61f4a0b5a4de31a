"""Generalized Jensen-Shannon divergence for on-policy (self-)distillation.

Endpoint convention (the one of TRL's GKD trainer and of the world-model audit's OPSD code;
other libraries use the opposite labelling, so check before comparing numbers):

    alpha = 0   ->  forward KL  KL(P_T || P_S)   (mode-covering: student must cover the teacher)
    alpha = 1   ->  reverse KL  KL(P_S || P_T)   (mode-seeking: student stays where teacher is high)
    0 < alpha < 1:  M = alpha P_T + (1 - alpha) P_S,
                    JSD_alpha = alpha KL(P_T || M) + (1 - alpha) KL(P_S || M)

JSD_alpha itself tends to 0 at both ends; the endpoints are the limits of JSD_alpha / alpha
(alpha -> 0) and JSD_alpha / (1 - alpha) (alpha -> 1), which is why they are special-cased.
The audit trains OPSD with alpha = 0.5, the symmetric JSD. The trainer is `lib/rl/opsd.py`.
`chunked_jsd_logprobs` computes the per-token divergence (and the student's log-probs) from hidden
states and head weights, a chunk of token positions at a time (`lib.models.chunked`).
"""
import jax
import jax.numpy as jnp
import optax

from lib.models.chunked import LOSS_CHUNK_TOKENS, head_logits, map_token_chunks


def _kl(logp: jax.Array, logq: jax.Array) -> jax.Array:
  """KL(p || q) over the last axis from finite log-probabilities (log-softmaxes of finite logits:
  an underflowed p contributes 0). optax names the arguments the other way round: targets p,
  predictions q."""
  return optax.losses.kl_divergence_with_log_targets(logq, logp)


def per_token_generalized_jsd(student_logits: jax.Array, teacher_logits: jax.Array,
                              alpha: float = 0.5, temperature: float = 1.0) -> jax.Array:
  """Generalized JSD D_alpha(P_S, P_T) at every position (see the module docstring).

      P_S = softmax(student_logits / temperature),  P_T = softmax(teacher_logits / temperature)
      M   = alpha P_T + (1 - alpha) P_S
      D   = alpha KL(P_T || M) + (1 - alpha) KL(P_S || M)     (0 < alpha < 1)
      D   = KL(P_T || P_S)  (alpha = 0),    KL(P_S || P_T)  (alpha = 1)

  Args:
    student_logits: [..., V] float logits, e.g. [B, T, V] (any float dtype; computed in float32).
    teacher_logits: [..., V] float logits of the same positions.
    alpha: mixture weight of the teacher, in [0, 1].
    temperature: > 0, applied to both distributions.
  Returns:
    [...] float32 divergences in nats (e.g. [B, T]).
  """
  if not 0.0 <= alpha <= 1.0:
    raise ValueError(f"alpha must lie in [0, 1]; got {alpha}")
  if temperature <= 0:
    raise ValueError(f"temperature must be > 0; got {temperature}")
  log_s = jax.nn.log_softmax(student_logits.astype(jnp.float32) / temperature, axis=-1)
  log_t = jax.nn.log_softmax(teacher_logits.astype(jnp.float32) / temperature, axis=-1)
  if alpha == 0.0:
    return _kl(log_t, log_s)
  if alpha == 1.0:
    return _kl(log_s, log_t)
  log_m = jnp.logaddexp(log_t + jnp.log(alpha), log_s + jnp.log1p(-alpha))
  return alpha * _kl(log_t, log_m) + (1.0 - alpha) * _kl(log_s, log_m)


def chunked_jsd_logprobs(student_hidden: jax.Array, student_w: jax.Array,
                         teacher_hidden: jax.Array, teacher_w: jax.Array, tokens: jax.Array, *,
                         alpha: float = 0.5, temperature: float = 1.0,
                         chunk_tokens: int = LOSS_CHUNK_TOKENS) -> tuple[jax.Array, jax.Array]:
  """Per-token generalized JSD and the student's log-probs of `tokens`, from hidden states, the
  [chunk, V] logits of student and teacher formed one chunk of positions at a time
  (`lib.models.chunked.map_token_chunks`, rematerialised in the backward pass).

      z_S = h_S @ W_S / temperature,   z_T = h_T @ W_T / temperature
      D   = per_token_generalized_jsd(z_S, z_T, alpha)       (temperature already applied)
      logp = log_softmax(z_S)[tokens]

  Args:
    student_hidden: [B, T, D] student hidden states; [:, t] predicts tokens[:, t].
    student_w: [D, V] the student's head weight.
    teacher_hidden: [B, T, D'] teacher hidden states of the same positions.
    teacher_w: [D', V] the teacher's head weight (stop its gradient at the call site when frozen).
    tokens: [B, T] int ids scored under the student.
    alpha: mixture weight of the teacher, in [0, 1].
    temperature: > 0, applied to both distributions.
    chunk_tokens: positions per chunk (> 0).
  Returns:
    (jsd, logp): float32 [B, T] divergences in nats and student log-probabilities.
  """
  def score(hs, ht, y):
    z_s = head_logits(hs, student_w, temperature)
    z_t = head_logits(ht, teacher_w, temperature)
    logp = jnp.take_along_axis(jax.nn.log_softmax(z_s, axis=-1),
                               y[:, None].astype(jnp.int32), axis=-1)[:, 0]
    return per_token_generalized_jsd(z_s, z_t, alpha), logp
  return map_token_chunks(score, chunk_tokens, student_hidden, teacher_hidden, tokens)


def generalized_jsd(student_logits: jax.Array, teacher_logits: jax.Array, mask: jax.Array,
                    alpha: float = 0.5, temperature: float = 1.0,
                    weights: jax.Array | None = None) -> jax.Array:
  """Token-mean generalized JSD between student and teacher over the full vocabulary.

      loss = sum_{b,t} m w D_alpha(P_S[b,t], P_T[b,t]) / sum_{b,t} m
      P_S = softmax(student_logits / temperature),  P_T = softmax(teacher_logits / temperature)

  alpha = 0 is the forward KL(P_T || P_S), alpha = 1 the reverse KL(P_S || P_T) (TRL GKD
  convention; see the module docstring). Gradients flow into both logits; stop the teacher's
  gradient at the call site when the teacher is frozen.

  Args:
    student_logits, teacher_logits: [B, T, V] scores of the same token positions.
    mask: [B, T], 1 where the position counts (e.g. the student's generated target span).
      Masked positions contribute exactly zero loss and zero gradient.
    alpha: mixture weight of the teacher, in [0, 1].
    temperature: > 0, applied to both distributions.
    weights: optional [B, T] per-token weights (importance weights; treated as given).
  Returns:
    scalar float32 loss.
  """
  per_tok = per_token_generalized_jsd(student_logits, teacher_logits, alpha, temperature)
  if weights is not None:
    per_tok = per_tok * weights
  return masked_token_mean(per_tok, mask)


def masked_token_mean(per_tok: jax.Array, mask: jax.Array) -> jax.Array:
  """sum_{b,t} m x / max(sum_{b,t} m, 1), masked entries selected away (zero gradient).

  Args:
    per_tok: [B, T] float per-token values. mask: [B, T], non-zero where the token counts.
  Returns:
    scalar float32.
  """
  mask = mask.astype(bool)
  return jnp.where(mask, per_tok, 0.0).sum() / jnp.maximum(mask.sum(), 1).astype(jnp.float32)


def importance_weights(logp: jax.Array, old_logp: jax.Array, clip_max: float = 2.0) -> jax.Array:
  """Detached per-token importance weights for samples drawn from an older policy.

      w = stop_gradient(min(exp(clip(logp - old_logp, -20, 20)), clip_max))

  Exactly 1 when the samples are fully on-policy (logp == old_logp).

  Args:
    logp: [B, T] float32 log-probs of the sampled tokens under the current policy.
    old_logp: [B, T] float32 log-probs of the same tokens under the sampling policy.
    clip_max: upper bound of the weights.
  Returns:
    [B, T] float32 weights in (0, clip_max].
  """
  w = jnp.exp(jnp.clip(logp - old_logp, -20.0, 20.0))
  return jax.lax.stop_gradient(jnp.minimum(w, clip_max))
