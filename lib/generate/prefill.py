"""What a rollout holds at its peak: the weights it samples from and the prompt's prefill.

`rollout_weights` gives the sampler a copy of the weights in another dtype (GRPO and OPSD keep
float32 master weights; a bfloat16 copy halves what the sampler reads per token, and its KV cache,
which takes the weights' dtype). `prefill` runs the prompts into the cache `rows` at a time (a
`fori_loop` writing each chunk's rows of the cache in place), so the [rows, heads, P, P] attention
scores of one chunk exist at a time instead of all B rows'. Each row's prefill does not depend on
the others, so the chunked prefill gives the unchunked logits and cache. Chunk i holds rows
i, i + B/rows, i + 2B/rows, ...: with the batch split in contiguous blocks over devices (`generate
(mesh=)`) and `rows` a multiple of their number, every device prefills its own rows, none moves.

    graphdef, state = rollout_weights(graphdef, state, "bfloat16")   # then sampling.generate
"""
import jax
import jax.numpy as jnp
from flax import nnx


def rollout_weights(graphdef, state, dtype: str):
  """A copy of the model's floating-point `nnx.Param`s in `dtype`; the rest (rotary tables) as is.

  Args:
    graphdef, state: the model, split with `nnx.split`.
    dtype: e.g. "bfloat16".
  Returns:
    (graphdef, state) to pass to `lib.generate.sampling.generate`; the cast arrays keep their
    shardings.
  """
  graphdef, params, rest = nnx.split(nnx.merge(graphdef, state), nnx.Param, ...)
  cast = lambda x: x.astype(dtype) if jnp.issubdtype(x.dtype, jnp.floating) else x
  return graphdef, nnx.merge_state(jax.tree.map(cast, params), rest)


def _prefill_all(model, cache, prompt_ids, prompt_mask):
  if hasattr(model, "extend_hidden"):  # project only the last prompt position onto the vocabulary
    hidden, cache = model.extend_hidden(prompt_ids, prompt_mask, cache)
    return model.logits(hidden[:, -1]), cache
  logits, cache = model.extend(prompt_ids, prompt_mask, cache)
  return logits[:, -1], cache


def prefill(model, cache, prompt_ids, prompt_mask, rows: int = 0):
  """Runs the prompts through the model (inside jit) -> (logits [B,V] at the last prompt position,
  the cache advanced by P slots).

  Args:
    model: the merged model (`init_cache`, `extend` or `extend_hidden` + `logits`, `config`).
    cache: its empty cache for B rows: every array [B, ...] but scalars (the write index).
    prompt_ids, prompt_mask: [B,P] int32, left-padded.
    rows: rows per prefill chunk; 0 or >= B: all rows in one pass.
  Raises:
    ValueError: B not divisible by `rows`.
  """
  b = prompt_ids.shape[0]
  if rows <= 0 or rows >= b:
    return _prefill_all(model, cache, prompt_ids, prompt_mask)
  if b % rows:
    raise ValueError(f"prefill_rows={rows} must divide the batch of {b} rows")
  leaves, treedef = jax.tree.flatten(cache)
  batched = [x.ndim > 0 for x in leaves]
  n = b // rows
  # [B, ...] -> [rows, n, ...]: chunk i is column i (strided rows), sliced along an unsplit axis
  split = lambda x: x.reshape(rows, n, *x.shape[1:])
  take = lambda x, i: jax.lax.dynamic_index_in_dim(x, i, 1, keepdims=False)
  put = lambda x, y, i: jax.lax.dynamic_update_index_in_dim(x, y, i, 1)

  def merge(arrays, scalars):   # the batched leaves and the scalar ones back in cache order
    arrays, scalars = iter(arrays), iter(scalars)
    return [next(arrays) if bt else next(scalars) for bt in batched]

  start = [x for x, bt in zip(leaves, batched) if not bt]

  def chunk(i, carry):
    logits, full, _ = carry
    # every chunk starts from the empty cache's scalars (the write index), not the last chunk's
    part = jax.tree.unflatten(treedef, merge([take(x, i) for x in full], start))
    out, part = _prefill_all(model, part, take(ids, i), take(mask, i))
    new = jax.tree.leaves(part)
    full = [put(x, y, i) for x, y in zip(full, [y for y, bt in zip(new, batched) if bt])]
    return (put(logits, out.astype(logits.dtype), i), full,
            [y for y, bt in zip(new, batched) if not bt])

  ids, mask = split(prompt_ids), split(prompt_mask)
  logits = jnp.zeros((rows, n, model.config.vocab_size), jnp.float32)
  full = [split(x) for x, bt in zip(leaves, batched) if bt]
  logits, full, scalars = jax.lax.fori_loop(0, n, chunk, (logits, full, start))
  full = [x.reshape(b, *x.shape[2:]) for x in full]
  return logits.reshape(b, -1), jax.tree.unflatten(treedef, merge(full, scalars))
