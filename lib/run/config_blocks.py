"""The config blocks a config file fills in: `model`, `plan`, `host` and `backend`, as plain
dicts.

Imports nothing but the standard library, so `configs/*.py` load without JAX, Flax or the trainers
(big_vision-style data-only configs; `tests/configs/test_configs_import_without_jax.py` keeps it
so). Each builder fills its block's defaults and rejects unknown fields, listing the valid ones, so
a typo fails when the config is built, not hours into a run. The code that reads the blocks calls
the same builders: `lib.models.model_setup.build_model` (the `model` block's fields),
`lib.plan.memory_plan.compute` (`plan`), `lib.backends.factory.make_backend` (`backend`),
`lib.hostloop.executor_factory.make_executor` (`host`).

    c.model = model_block(checkpoint="path/to/Qwen3-0.6B", dtype="bfloat16")
    c.plan = plan_block(trainer="grpo", rows=256, seq_len=1024, reference=True)
    c.backend = backend_config("openai_http", base_url="http://127.0.0.1:8000/v1")
"""
from typing import Any

MODEL_BLOCK_DEFAULTS: dict[str, Any] = dict(checkpoint="", preset="qwen3-tiny", overrides={},
                                            dtype="float32", vocab_size=384, remat="none")
# The `model.remat` policies `lib.models.remat.REMAT_POLICIES` implements, by name.
REMAT_POLICY_NAMES = ("none", "full", "dots")
PLAN_BLOCK_DEFAULTS: dict[str, Any] = dict(
    trainer="sft", rows=8, micro_rows=0, seq_len=128, response_len=0, reference=False,
    embedder="", embedder_dtype="bfloat16", device_memory_gib=0.0, compile=True,
    check="analytic", target="cpu")
# Where a host loop's envs run (lib/hostloop/executors.py): executor "inline" | "processes" | "ray";
# a reset (which builds the env) or step past its timeout ends that episode as env_error.
# workers: most worker processes / actors at once, which caps the live episodes (0: one per CPU
# core). ray_address "" starts a local Ray in the run; "auto" or "ray://host:10001" joins one.
HOST_BLOCK_DEFAULTS: dict[str, Any] = dict(
    executor="inline", step_timeout_s=60.0, reset_timeout_s=300.0, workers=0, ray_address="",
    ray_num_cpus=0.25)


def filled_block(name: str, defaults: dict, fields: dict) -> dict:
  """`defaults` with `fields` replaced; the config blocks' one check for unknown fields.

  Args:
    name: the block's name, for the error message.
    defaults: every field of the block with its default.
    fields: the fields to set.
  Returns:
    A new dict with every field.
  Raises:
    KeyError: a field that is not part of the block (the message lists the valid ones).
  """
  unknown = set(fields) - set(defaults)
  if unknown:
    raise KeyError(f"{name} block has no fields {sorted(unknown)}; valid: {', '.join(defaults)}")
  return {**defaults, **fields}


def check_remat_policy(name: str) -> str:
  """`name` if it is a known remat policy.

  Args:
    name: one of REMAT_POLICY_NAMES.
  Returns:
    name.
  Raises:
    ValueError: an unknown policy (the message lists the valid ones).
  """
  if name not in REMAT_POLICY_NAMES:
    raise ValueError(f"unknown remat policy {name!r}; valid: {', '.join(REMAT_POLICY_NAMES)}")
  return name


def model_block(**fields) -> dict:
  """The complete `model` config block: MODEL_BLOCK_DEFAULTS with `fields` replaced.

  Args:
    **fields: any of checkpoint, preset, overrides, dtype, vocab_size, remat.
  Returns:
    A new dict with every field (`overrides` copied).
  Raises:
    KeyError: a field that is not part of the block (the message lists the valid ones).
    ValueError: an unknown remat policy.
  """
  out = filled_block("model", MODEL_BLOCK_DEFAULTS, fields)
  out["overrides"] = dict(out["overrides"] or {})
  check_remat_policy(out["remat"])
  return out


BACKEND_DEFAULTS: dict[str, dict[str, Any]] = {
    # model: the one `model` block (lib/models/model_setup.py); checkpoint "" = embedded random
    # model of architecture `preset` with a tokenizer trained here (in <workdir>/tiny_model).
    "flax": dict(model=model_block(), seed=0, max_batch=64, min_batch=1),
    # api_key_env names an environment variable; the key itself never enters a config.
    "openai_http": dict(base_url="http://127.0.0.1:8000/v1", model="accord", api_key_env="",
                        embed_model="", max_concurrency=8, timeout_s=120.0, max_retries=4,
                        backoff_base_s=0.5, backoff_max_s=30.0, send_top_k=False, seed=0),
    # jax_memory_fraction: XLA_PYTHON_CLIENT_MEM_FRACTION that launch.py sets before JAX starts
    # when this backend runs in the process, so JAX (envs, a trainer) and vLLM share the GPU;
    # it and gpu_memory_utilization must add up to less than 1 (an explicit env var wins).
    "vllm": dict(model="", embed=False, seed=0, gpu_memory_utilization=0.85, max_model_len=8192,
                 dtype="auto", tensor_parallel_size=1, jax_memory_fraction=0.10),
    "scripted": dict(seed=0),
}


def plan_block(**fields) -> dict:
  """The complete `plan` config block: PLAN_BLOCK_DEFAULTS with `fields` replaced.

  Args:
    **fields: any PLAN_BLOCK_DEFAULTS field.
  Returns:
    A new dict with every field.
  Raises:
    KeyError: a field that is not part of the block (the message lists the valid ones).
  """
  return filled_block("plan", PLAN_BLOCK_DEFAULTS, fields)


def host_block(**fields) -> dict:
  """The complete `host` config block (the host loop's env executor): HOST_BLOCK_DEFAULTS with
  `fields` replaced.

  Args:
    **fields: any HOST_BLOCK_DEFAULTS field.
  Returns:
    A new dict with every field.
  Raises:
    KeyError: a field that is not part of the block (the message lists the valid ones).
  """
  return filled_block("host", HOST_BLOCK_DEFAULTS, fields)


def backend_config(kind: str, **overrides) -> dict:
  """A complete backend config dict for `kind` with `overrides` applied.

  Args:
    kind: a key of BACKEND_DEFAULTS ("flax", "openai_http", "vllm", "scripted").
    **overrides: settings of that kind; for "flax", a partial `model` block is completed.
  Returns:
    {"kind": kind, **BACKEND_DEFAULTS[kind], **overrides}.
  Raises:
    KeyError: an unknown kind or setting.
  """
  if kind not in BACKEND_DEFAULTS:
    raise KeyError(f"unknown backend kind {kind!r}; valid: {', '.join(sorted(BACKEND_DEFAULTS))}")
  unknown = set(overrides) - set(BACKEND_DEFAULTS[kind])
  if unknown:
    raise KeyError(f"backend {kind!r} has no settings {sorted(unknown)}; "
                   f"valid: {', '.join(sorted(BACKEND_DEFAULTS[kind]))}")
  out = {"kind": kind, **BACKEND_DEFAULTS[kind], **overrides}
  if kind == "flax":   # a partial model block is completed (and checked) field-wise
    out["model"] = model_block(**dict(out["model"]))
  return out


def backends_config(kind: str, **sections: dict) -> dict:
  """A sectioned backend config: the chosen kind plus complete settings for every kind.

  `--config.backend.kind=openai_http --config.backend.openai_http.base_url=...` then switches
  backends from the command line (`make_backend` uses the chosen kind's section only).

  Args:
    kind: the kind to use (validated).
    **sections: per kind, a dict of overrides for its section.
  Returns:
    {"kind": kind, <every kind>: its complete settings without "kind"}.
  Raises:
    KeyError: an unknown kind or setting.
  """
  unknown = set(sections) - set(BACKEND_DEFAULTS)
  if unknown:
    raise KeyError(f"unknown backend kinds {sorted(unknown)}; "
                   f"valid: {', '.join(sorted(BACKEND_DEFAULTS))}")
  out = {"kind": kind}
  for k in BACKEND_DEFAULTS:
    full = backend_config(k, **sections.get(k, {}))
    out[k] = {key: v for key, v in full.items() if key != "kind"}
  backend_config(kind)  # validates kind
  return out
