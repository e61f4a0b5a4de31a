"""Sentence embeddings from a Qwen backbone, Qwen3-Embedding style: the final-norm hidden state of
the last real token, L2-normalised. Works with left or right padding."""
import jax.numpy as jnp


def last_token_index(attention_mask):
  """Index of the last 1 in each row of attention_mask [B,T] -> int32 [B]."""
  t = attention_mask.shape[-1]
  return jnp.max(jnp.where(attention_mask.astype(bool), jnp.arange(t), -1), axis=-1).astype(jnp.int32)


def embed(model, input_ids, attention_mask=None, eps: float = 1e-12):
  """input_ids [B,T] -> float32 [B, hidden] unit vectors (cosine similarity = dot product)."""
  if attention_mask is None:
    attention_mask = jnp.ones(input_ids.shape, jnp.int32)
  hidden = model.hidden_states(input_ids, attention_mask)
  idx = last_token_index(attention_mask)
  pooled = jnp.take_along_axis(hidden, idx[:, None, None], axis=1)[:, 0].astype(jnp.float32)
  return pooled / jnp.maximum(jnp.linalg.norm(pooled, axis=-1, keepdims=True), eps)
