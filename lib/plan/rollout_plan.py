"""The rollout sampler's program, compiled with abstract inputs for a memory plan.

GRPO and OPSD sample their responses between updates with `lib.generate.sampling.generate`, on the
policy's float32 master weights as the train state holds them (`lib.rl.grpo.nnx_sample_fn`), or on
a copy in `weights_dtype` (a bfloat16 copy: half the weights read per token and a bf16 KV cache),
optionally prefilling `prefill_rows` rows at a time (`lib.generate.prefill`). Its
jitted program (`lib.generate.sampling._generate_jit`: prefill, then a `while_loop` of one-token
decode steps over a KV cache it updates in place) is lowered here for `rows` prompts of `prompt_len`
tokens and `new_tokens` new tokens, the weights laid out like the train state's params and the batch
and cache split over ("data", "fsdp") as `generate(mesh=)` splits them.

    compiled = rollout_plan.compile_rollout(model, params, mesh, rows=256, prompt_len=1536,
                                           new_tokens=512)
    compiled.memory_analysis()       # arguments (weights + cache + prompts), temporaries, ...
"""
from typing import Any

import jax
import jax.numpy as jnp
from flax import nnx

from lib.generate import sampling
from lib.parallel import sharding


def _sds(x, sh):
  return jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=sh)


def compile_rollout(model: nnx.Module, params: Any, params_sh: Any, mesh: jax.sharding.Mesh, *,
                    rows: int, prompt_len: int, new_tokens: int, weights_dtype: str = "",
                    prefill_rows: int = 0) -> jax.stages.Compiled:
  """Lowers and compiles one rollout (prefill + `new_tokens` decode steps) for `mesh`.

  Args:
    model: the abstract policy (`memory_plan.abstract_model`); its non-Param state (rotary tables)
      is an argument, as in `generate`.
    params: the abstract params (ShapeDtypeStruct leaves, float32 master weights).
    params_sh: their shardings on `mesh`.
    mesh: the plan's ("data", "fsdp", "model") mesh, local or a TPU topology's.
    rows: sequences sampled at once (all of a GRPO step's prompts x group).
    prompt_len: prompt tokens per row. new_tokens: generated tokens per row.
    weights_dtype: "" = sample from `params` as they are; else from a copy in this dtype, which is
      then the program's weight argument (and the KV cache's dtype).
    prefill_rows: rows per prefill chunk (0 = all at once); it must divide `rows` and be a multiple
      of the mesh's data x fsdp devices (each chunk's rows split over them).
  Returns:
    The compiled program (`memory_analysis()`, `cost_analysis()`).
  Raises:
    ValueError: rows not divisible by the mesh's data x fsdp devices.
  """
  n = mesh.shape["data"] * mesh.shape["fsdp"]
  if rows % n:
    raise ValueError(f"rollout rows={rows} must be a multiple of data x fsdp = {n}")
  if prefill_rows and (rows % prefill_rows or prefill_rows % n):
    raise ValueError(f"plan.prefill_rows={prefill_rows} must divide rollout rows={rows} and be a "
                     f"multiple of data x fsdp = {n}")
  if weights_dtype:
    params = jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, weights_dtype), params)
  graphdef, _, rest = nnx.split(model, nnx.Param, ...)
  repl = sharding.replicated(mesh)
  state = nnx.merge_state(jax.tree.map(_sds, params, params_sh),
                          jax.tree.map(lambda x: _sds(x, repl), rest))
  rows_sh = sharding.batch_sharding(mesh)
  cache = jax.eval_shape(lambda: model.init_cache(rows, prompt_len + new_tokens,
                                                  weights_dtype or None))
  # Every cache array is [B, ...] except the scalar write index (generate's shard_batch rule).
  cache = jax.tree.map(lambda x: _sds(x, rows_sh if x.ndim else repl), cache)
  ids = jax.ShapeDtypeStruct((rows, prompt_len), jnp.int32, sharding=rows_sh)
  key = jax.eval_shape(lambda: jax.random.key(0))
  key = jax.ShapeDtypeStruct(key.shape, key.dtype, sharding=repl)
  scalar = jax.ShapeDtypeStruct((), jnp.float32, sharding=repl)
  lowered = sampling._generate_jit.lower(   # the sampler's own jitted function, not a copy
      graphdef, state, cache, ids, ids, key, scalar, scalar, max_new_tokens=new_tokens, top_k=0,
      eos_ids=(), pad_id=0, top_logprobs=0, prefill_rows=prefill_rows)
  return lowered.compile()
