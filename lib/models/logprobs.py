"""Per-token log-probabilities: of given tokens under given logits (`token_logprobs`, what the
losses read with `loss_chunk_tokens=0`), and of whole sequences under a model
(`sequence_token_logprobs`). The losses' default, vocabulary-chunked path computes the same
numbers from hidden states without [B, T, V] logits: `lib.models.chunked`.
"""
import jax
import jax.numpy as jnp
import optax


def token_logprobs(logits: jax.Array, tokens: jax.Array,
                   temperature: float = 1.0) -> jax.Array:
  """log softmax(logits / temperature)[..., tokens]: [B, T, V], [B, T] -> [B, T] (float32), the
  negated integer-label cross-entropy. Align first: logits[:, t] must be the scores *for*
  tokens[:, t].

  Args:
    logits: [B, T, V] (any float dtype; computed in float32).
    tokens: [B, T] int ids.
    temperature: divides the logits before the softmax.
  Returns:
    float32 [B, T] log-probabilities.
  """
  return -optax.losses.softmax_cross_entropy_with_integer_labels(
      logits.astype(jnp.float32) / temperature, tokens.astype(jnp.int32))


def sequence_token_logprobs(model, input_ids, attention_mask=None):
  """log p(input_ids[:, t] | input_ids[:, :t]) for t >= 1: the model run on whole sequences, each
  token scored by its predecessor's logits (`token_logprobs` of given logits).

  Args:
    model: a Qwen or Qwen35.
    input_ids: int [B,T].
    attention_mask: [B,T], 1 = token, 0 = padding; None = all tokens.

  Returns:
    float32 [B,T-1]; 0 where token t or its predecessor is padding (a left-padded row's first real
    token has no context to score it).
  """
  logp = token_logprobs(model(input_ids, attention_mask)[:, :-1], input_ids[:, 1:])
  if attention_mask is None:
    return logp
  mask = attention_mask.astype(bool)
  return jnp.where(mask[:, 1:] & mask[:, :-1], logp, 0.0)
