"""The config blocks, each declared once as a frozen dataclass (`ConfigBlock`): its fields, their
types and defaults. A config file fills a block as a plain dict with `Block.block(**fields)` (or
the builders below: `model_block`, `plan_block`, `host_block`, `backend_config`); the code that
reads a block checks it with `Block.from_config(config.x)`. Both reject an unknown field, naming
the valid ones, so a typo fails when the config is built, not hours into a run. Trainer settings
use the same base: `lib.sft.loop.SFTConfig`, `lib.rl.grpo.GRPOConfig`, `lib.rl.opsd.OPSDConfig`.

Imports nothing but the standard library, so `configs/*.py` load without JAX, Flax or the
trainers (big_vision-style data-only configs; `tests/configs/test_configs_import_without_jax.py`
keeps it so). The readers: `lib.models.model_setup.build_model` (`model`),
`lib.plan.memory_plan.compute` (`plan`), `lib.backends.factory.make_backend` (`backend`),
`lib.hostloop.executor_factory.make_executor` (`host`).

    c.model = model_block(checkpoint="path/to/Qwen3-0.6B", dtype="bfloat16")
    c.plan = plan_block(trainer="grpo", rows=256, seq_len=1024, reference=True)
    c.backend = backend_config("openai_http", base_url="http://127.0.0.1:8000/v1")
"""
import dataclasses
from typing import Any, ClassVar

# The `model.remat` policies `lib.models.remat.REMAT_POLICIES` implements, by name.
REMAT_POLICY_NAMES = ("none", "full", "dots")


class UnknownFieldError(KeyError, ValueError):
  """A config block given a field it does not declare (a KeyError for dict-style callers, a
  ValueError for the trainers' callers)."""

  def __str__(self) -> str:
    return str(self.args[0]) if self.args else ""


@dataclasses.dataclass(frozen=True)
class ConfigBlock:
  """Base of every config block: subclass as a frozen dataclass with defaults for every field and
  a `block_name` (for error messages)."""
  block_name: ClassVar[str] = ""

  @classmethod
  def field_names(cls) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls))

  @classmethod
  def check_fields(cls, names) -> None:
    """Raises UnknownFieldError naming `names` the block does not declare and the valid ones."""
    unknown = sorted(set(names) - set(cls.field_names()))
    if unknown:
      raise UnknownFieldError(f"{cls.block_name or cls.__name__} block has no fields {unknown}; "
                              f"valid: {', '.join(cls.field_names())}")

  @classmethod
  def from_config(cls, c: Any) -> "ConfigBlock":
    """The block read from a mapping (dict or ml_collections.ConfigDict) of its fields; absent
    fields keep their defaults.

    Args:
      c: mapping of field names to values.
    Returns:
      The block instance.
    Raises:
      UnknownFieldError: a field the block does not declare.
    """
    fields = dict(c)
    cls.check_fields(fields)
    return cls(**fields)

  @classmethod
  def block(cls, **fields) -> dict:
    """The complete block as a plain dict (for config files): every field, `fields` replaced.

    Args:
      **fields: any declared fields.
    Returns:
      A new dict with every field. Values are kept as given, not copied: a config's
      `FieldReference` (e.g. `rows=c.train.get_ref("batch")`) stays linked to its source field.
    Raises:
      UnknownFieldError: a field the block does not declare.
    """
    cls.check_fields(fields)
    block = cls(**fields)
    return {name: getattr(block, name) for name in cls.field_names()}

  @classmethod
  def defaults(cls) -> dict:
    """Every field with its default, as a plain dict."""
    return cls.block()


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


@dataclasses.dataclass(frozen=True)
class ModelBlock(ConfigBlock):
  """The one `model` block of every trainer, backend and server (`lib.models.model_setup`):
  checkpoint "" = a from-scratch model of architecture `preset` with `overrides`; dtype is the
  compute dtype (master weights stay float32); vocab_size of a from-scratch tokenizer; remat one
  of REMAT_POLICY_NAMES."""
  block_name: ClassVar[str] = "model"
  checkpoint: str = ""
  preset: str = "qwen3-tiny"
  overrides: dict = dataclasses.field(default_factory=dict)
  dtype: str = "float32"
  vocab_size: int = 384
  remat: str = "none"

  def __post_init__(self):
    check_remat_policy(self.remat)


@dataclasses.dataclass(frozen=True)
class PlanBlock(ConfigBlock):
  """The `plan` block of a training config: the memory plan checked before the run starts (the
  fields are described in lib/plan/memory_plan.py)."""
  block_name: ClassVar[str] = "plan"
  trainer: str = "sft"
  rows: int = 8
  micro_rows: int = 0
  seq_len: int = 128
  response_len: int = 0
  reference: bool = False
  embedder: str = ""
  embedder_dtype: str = "bfloat16"
  device_memory_gib: float = 0.0
  compile: bool = True
  check: str = "analytic"
  target: str = "cpu"
  lengths: tuple = ()
  padding: str = "max"
  bucket_multiple: int = 0
  loss_chunk_tokens: int = -1
  rollout_dtype: str = ""
  prefill_rows: int = 0
  reference_dtype: str = ""


@dataclasses.dataclass(frozen=True)
class HostBlock(ConfigBlock):
  """Where a host loop's envs run (lib/hostloop/executors.py): executor "inline" | "processes" |
  "ray"; a reset (which builds the env) or step past its timeout ends that episode as env_error.
  workers: most worker processes / actors at once, which caps the live episodes (0: one per CPU
  core). ray_address "" starts a local Ray in the run; "auto" or "ray://host:10001" joins one."""
  block_name: ClassVar[str] = "host"
  executor: str = "inline"
  step_timeout_s: float = 60.0
  reset_timeout_s: float = 300.0
  workers: int = 0
  ray_address: str = ""
  ray_num_cpus: float = 0.25


@dataclasses.dataclass(frozen=True)
class FlaxBackendBlock(ConfigBlock):
  """`flax`: our jit sampler; `model` is the one model block (checkpoint "" = the embedded random
  model of architecture `preset` with a tokenizer trained here, in <workdir>/tiny_model)."""
  block_name: ClassVar[str] = "backend 'flax'"
  model: dict = dataclasses.field(default_factory=ModelBlock.defaults)
  seed: int = 0
  max_batch: int = 64
  min_batch: int = 1


@dataclasses.dataclass(frozen=True)
class OpenAIHTTPBackendBlock(ConfigBlock):
  """`openai_http`: any OpenAI-compatible server; api_key_env names an environment variable, the
  key itself never enters a config."""
  block_name: ClassVar[str] = "backend 'openai_http'"
  base_url: str = "http://127.0.0.1:8000/v1"
  model: str = "accord"
  api_key_env: str = ""
  embed_model: str = ""
  max_concurrency: int = 8
  timeout_s: float = 120.0
  max_retries: int = 4
  backoff_base_s: float = 0.5
  backoff_max_s: float = 30.0
  send_top_k: bool = False
  seed: int = 0


@dataclasses.dataclass(frozen=True)
class VLLMBackendBlock(ConfigBlock):
  """`vllm` in-process. jax_memory_fraction: XLA_PYTHON_CLIENT_MEM_FRACTION that launch.py sets
  before JAX starts when this backend runs in the process, so JAX (envs, a trainer) and vLLM share
  the GPU; it and gpu_memory_utilization must add up to less than 1 (an explicit env var wins)."""
  block_name: ClassVar[str] = "backend 'vllm'"
  model: str = ""
  embed: bool = False
  seed: int = 0
  gpu_memory_utilization: float = 0.85
  max_model_len: int = 8192
  dtype: str = "auto"
  tensor_parallel_size: int = 1
  jax_memory_fraction: float = 0.10


@dataclasses.dataclass(frozen=True)
class ScriptedBackendBlock(ConfigBlock):
  """`scripted`: programmatic policies with an explicit seeded noise model."""
  block_name: ClassVar[str] = "backend 'scripted'"
  seed: int = 0


BACKEND_BLOCKS: dict[str, type[ConfigBlock]] = {
    "flax": FlaxBackendBlock, "openai_http": OpenAIHTTPBackendBlock, "vllm": VLLMBackendBlock,
    "scripted": ScriptedBackendBlock}
BACKEND_DEFAULTS: dict[str, dict[str, Any]] = {k: b.defaults() for k, b in BACKEND_BLOCKS.items()}


def model_block(**fields) -> dict:
  """The complete `model` config block (`ModelBlock`) with `fields` replaced.

  Args:
    **fields: any of checkpoint, preset, overrides, dtype, vocab_size, remat.
  Returns:
    A new dict with every field (`overrides` copied).
  Raises:
    UnknownFieldError (a KeyError): a field that is not part of the block.
    ValueError: an unknown remat policy.
  """
  out = ModelBlock.block(**fields)
  out["overrides"] = dict(out["overrides"] or {})
  return out


def plan_block(**fields) -> dict:
  """The complete `plan` config block (`PlanBlock`) with `fields` replaced.

  Raises:
    UnknownFieldError (a KeyError): a field that is not part of the block.
  """
  return PlanBlock.block(**fields)


def host_block(**fields) -> dict:
  """The complete `host` config block (`HostBlock`, the host loop's env executor) with `fields`
  replaced.

  Raises:
    UnknownFieldError (a KeyError): a field that is not part of the block.
  """
  return HostBlock.block(**fields)


def backend_config(kind: str, **overrides) -> dict:
  """A complete backend config dict for `kind` with `overrides` applied.

  Args:
    kind: a key of BACKEND_BLOCKS ("flax", "openai_http", "vllm", "scripted").
    **overrides: settings of that kind; for "flax", a partial `model` block is completed.
  Returns:
    {"kind": kind, **BACKEND_DEFAULTS[kind], **overrides}.
  Raises:
    KeyError: an unknown kind; UnknownFieldError (a KeyError): an unknown setting.
  """
  if kind not in BACKEND_BLOCKS:
    raise KeyError(f"unknown backend kind {kind!r}; valid: {', '.join(sorted(BACKEND_BLOCKS))}")
  out = {"kind": kind, **BACKEND_BLOCKS[kind].block(**overrides)}
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
