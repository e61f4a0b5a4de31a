"""Backends from config: `make_backend(config.backend)` with `backend.kind` naming the backend.

Each kind has a defaults table (`lib.run.config_blocks.BACKEND_DEFAULTS`, JAX-free so config files
load without JAX); `backend_config(kind, **overrides)` there returns a complete dict for a config
file, and `make_backend` rejects keys a kind does not know (listing the valid ones), so a typo in
`--config.backend.timout_s=...` fails at start, not silently at hour three.

  c.backend = config_blocks.backend_config("openai_http", base_url="http://127.0.0.1:8000/v1",
                                           model="accord", api_key_env="")
  backend = factory.make_backend(config.backend, workdir=workdir)

To switch backends from the command line, give a config one section per kind
(`config_blocks.backends_config`): `--config.backend.kind=openai_http
--config.backend.openai_http.base_url=...` then picks the `openai_http` section and ignores the
others.

Scripted backends need a policy object, passed as `policy=`; their config holds only the seed.
"""
from typing import Any, Callable

from lib.backends.flax_backend import FlaxBackend
from lib.backends.openai_http import OpenAIBackend
from lib.backends.protocol import Backend
from lib.backends.scripted import ScriptedBackend
from lib.run.config_blocks import BACKEND_DEFAULTS, backend_config
# vllm_backend imports vLLM itself only when a VLLMBackend is constructed.
from lib.backends.vllm_backend import VLLMBackend


def jax_memory_fraction(config: Any) -> float | None:
  """The JAX memory fraction a run config asks for: that of its `backend` block when the block
  (flat or sectioned) selects the in-process vllm backend.

  Args:
    config: a run config (dict or ConfigDict).
  Returns:
    backend.jax_memory_fraction, or None when the run has no in-process vLLM.
  Raises:
    ValueError: a fraction outside (0, 1), or one that leaves no room for vLLM's share.
  """
  block = config.get("backend") if hasattr(config, "get") else None
  if not block or not hasattr(block, "get") or block.get("kind") != "vllm":
    return None
  section = block.get("vllm") or block
  default = BACKEND_DEFAULTS["vllm"]["jax_memory_fraction"]
  fraction = float(section.get("jax_memory_fraction", default))
  vllm_share = float(section.get("gpu_memory_utilization", 0.0))
  if not 0.0 < fraction < 1.0 or fraction + vllm_share >= 1.0:
    raise ValueError(f"backend.jax_memory_fraction={fraction} must be in (0, 1) and leave room "
                     f"for vLLM's gpu_memory_utilization={vllm_share} (their sum must be < 1)")
  return fraction


def _flax(c: dict, workdir: str | None, policy) -> Backend:
  del policy
  if not c["model"]["checkpoint"] and workdir is None:
    raise ValueError("the embedded tiny flax model needs a workdir for its tokenizer")
  return FlaxBackend.from_block(c["model"], tokenizer_dir=workdir and f"{workdir}/tiny_model",
                                seed=c["seed"], max_batch=c["max_batch"],
                                min_batch=c["min_batch"])


def _openai(c: dict, workdir: str | None, policy) -> Backend:
  del workdir, policy
  return OpenAIBackend(c["base_url"], c["model"], api_key_env=c["api_key_env"],
                       embed_model=c["embed_model"] or None,
                       max_concurrency=c["max_concurrency"], timeout_s=c["timeout_s"],
                       max_retries=c["max_retries"], backoff_base_s=c["backoff_base_s"],
                       backoff_max_s=c["backoff_max_s"], send_top_k=c["send_top_k"],
                       seed=c["seed"])


def _vllm(c: dict, workdir: str | None, policy) -> Backend:
  del workdir, policy
  if not c["model"]:
    raise ValueError("backend.model must name a local model directory for kind='vllm'")
  return VLLMBackend(c["model"], embed=c["embed"], seed=c["seed"],
                     gpu_memory_utilization=c["gpu_memory_utilization"],
                     max_model_len=c["max_model_len"], dtype=c["dtype"],
                     tensor_parallel_size=c["tensor_parallel_size"])


def _scripted(c: dict, workdir: str | None, policy) -> Backend:
  del workdir
  if policy is None:
    raise ValueError("kind='scripted' needs make_backend(..., policy=<ScriptedPolicy>)")
  return ScriptedBackend(policy, seed=c["seed"])


BUILDERS: dict[str, Callable[[dict, str | None, Any], Backend]] = {
    "flax": _flax, "openai_http": _openai, "vllm": _vllm, "scripted": _scripted,
}


def make_backend(config, *, workdir: str | None = None, policy=None) -> Backend:
  """Builds the backend described by a config.

  Args:
    config: a dict or ConfigDict with a `kind` field, flat (that kind's settings) or sectioned
      (as `backends_config`, only `kind`'s section is used).
    workdir: where the embedded tiny flax model writes its tokenizer (needed without a
      checkpoint).
    policy: the ScriptedPolicy, for kind "scripted" only.
  Returns:
    The Backend.
  """
  c = dict(config.to_dict() if hasattr(config, "to_dict") else config)
  kind = c.pop("kind", None)
  if isinstance(c.get(kind), dict):  # sectioned layout (backends_config): use kind's section
    stray = set(c) - set(BACKEND_DEFAULTS)
    if stray:
      raise KeyError(f"backend config has keys {sorted(stray)} outside the per-kind sections")
    c = c[kind]
  full = backend_config(kind, **c)  # validates kind and keys
  return BUILDERS[kind](full, workdir, policy)
