"""The one table of named model configs: every family's presets (Qwen2/Qwen2.5/Qwen3 in
`qwen/config.py`, Qwen3.5 in `qwen3_5/config.py`) under one lookup.

`preset(name, **overrides)` is what every caller uses (`lib.models.model_setup.build_model`,
`lib.plan.memory_plan.arch_config`, the benchmarks), so a name that can be planned can be built. A
name defined by two families raises when this module is imported.
"""
import types
from typing import Mapping

from lib.models.qwen.config import PRESETS as QWEN_PRESETS, QwenConfig
from lib.models.qwen3_5.config import PRESETS as QWEN3_5_PRESETS, Qwen35Config

ModelConfig = QwenConfig | Qwen35Config


def merged_presets(*tables: Mapping[str, ModelConfig]) -> Mapping[str, ModelConfig]:
  """The families' preset tables as one read-only name -> config view.

  Args:
    *tables: each family's name -> config dict.

  Returns:
    A read-only mapping of every name, in the tables' order.

  Raises:
    ValueError: a name that two tables define (it names both config types).
  """
  merged: dict[str, ModelConfig] = {}
  for table in tables:
    for name, config in table.items():
      if name in merged:
        raise ValueError(f"preset {name!r} is defined twice ({type(merged[name]).__name__} and "
                         f"{type(config).__name__})")
      merged[name] = config
  return types.MappingProxyType(merged)


# Real sizes follow the released config.json files; the tiny ones exist for tests and benchmarks.
PRESETS: Mapping[str, ModelConfig] = merged_presets(QWEN_PRESETS, QWEN3_5_PRESETS)


def preset(name: str, **overrides) -> ModelConfig:
  """A named config, optionally with fields replaced: `preset("qwen3-tiny", vocab_size=300)`.

  Args:
    name: a key of PRESETS (either family).
    **overrides: fields of that family's config to replace (a Qwen3.5 `num_layers` needs the
      matching `layer_types`).

  Returns:
    A QwenConfig or a Qwen35Config (`lib.models.build` makes a Qwen or a Qwen35 of it); a
    KeyError lists the valid names.
  """
  if name not in PRESETS:
    raise KeyError(f"unknown preset {name!r}; valid: {', '.join(sorted(PRESETS))}")
  return PRESETS[name].replace(**overrides)
