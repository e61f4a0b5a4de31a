"""Sentence embeddings from a Qwen backbone, Qwen3-Embedding style: the final-norm hidden state of
the last real token, L2-normalised. Works with left or right padding."""
import jax.numpy as jnp


def last_token_index(attention_mask):
  """Index of the last 1 in each row (-1 for an all-padding row).

  Args:
    attention_mask: [B,T], 1 = token, 0 = padding.

  Returns:
    int32 [B].
  """
  t = attention_mask.shape[-1]
  return jnp.max(jnp.where(attention_mask.astype(bool), jnp.arange(t), -1), axis=-1).astype(jnp.int32)


def embed(model, input_ids, attention_mask=None, eps: float = 1e-12):
  """Qwen3-Embedding-style sentence embeddings (cosine similarity = dot product).

  Args:
    model: a Qwen or Qwen35 (anything with `hidden_states(ids, mask)`).
    input_ids: int [B,T]; left or right padded.
    attention_mask: [B,T], 1 = token, 0 = padding; None = all tokens.
    eps: floor of the norm, so an all-zero vector stays finite.

  Returns:
    float32 [B, hidden] unit vectors: the final-norm hidden state of each row's last real token.
  """
  if attention_mask is None:
    attention_mask = jnp.ones(input_ids.shape, jnp.int32)
  hidden = model.hidden_states(input_ids, attention_mask)
  idx = last_token_index(attention_mask)
  pooled = jnp.take_along_axis(hidden, idx[:, None, None], axis=1)[:, 0].astype(jnp.float32)
  return pooled / jnp.maximum(jnp.linalg.norm(pooled, axis=-1, keepdims=True), eps)
