"""Qwen3.5 hybrid decoder config, mapped 1:1 to and from a Hugging Face `config.json`.

Qwen3.5 interleaves Gated DeltaNet (linear attention) layers with gated full-attention layers as
`layer_types` lists them (three linear per full one in the released models). A full checkpoint
(`model_type: "qwen3_5"`, `Qwen3_5ForConditionalGeneration`) nests the text decoder under
`text_config` next to a vision tower; `from_hf` reads either layout, `to_hf` writes the text-only
`qwen3_5_text` (`Qwen3_5ForCausalLM`) layout.
"""
import dataclasses
from typing import Any

LINEAR, FULL = "linear_attention", "full_attention"
_TEXT_TYPE, _FULL_TYPE = "qwen3_5_text", "qwen3_5"


def default_layer_types(num_layers: int, interval: int = 4) -> tuple[str, ...]:
  """Every `interval`-th layer is full attention, the rest linear (transformers' default rule).

  Args:
    num_layers: decoder depth.
    interval: one full-attention layer per `interval` layers, last in each group.

  Returns:
    num_layers entries of LINEAR / FULL.
  """
  return tuple(FULL if (i + 1) % interval == 0 else LINEAR for i in range(num_layers))


@dataclasses.dataclass(frozen=True)
class Qwen35Config:
  """Architecture hyper-parameters of the text decoder; `from_hf`/`to_hf` translate the names."""
  model_type: str = _TEXT_TYPE
  vocab_size: int = 248320
  hidden_size: int = 1024
  intermediate_size: int = 3584
  num_layers: int = 24
  layer_types: tuple[str, ...] = default_layer_types(24)
  # Full-attention layers.
  num_heads: int = 8
  num_kv_heads: int = 2
  head_dim: int = 256
  attention_bias: bool = False
  rope_theta: float = 10_000_000.0
  partial_rotary_factor: float = 0.25
  # Multimodal RoPE sections; for text every section sees the same position, so plain RoPE results.
  # Kept only so a saved config.json round-trips.
  mrope_section: tuple[int, ...] | None = None
  mrope_interleaved: bool = False
  # Gated DeltaNet layers.
  linear_num_key_heads: int = 16
  linear_num_value_heads: int = 16
  linear_key_head_dim: int = 128
  linear_value_head_dim: int = 128
  linear_conv_kernel: int = 4
  deltanet_chunk: int = 64  # ours, not in config.json: chunk length of the parallel (prefill) form
  rms_norm_eps: float = 1e-6
  tie_word_embeddings: bool = True
  max_position_embeddings: int = 262144
  bos_token_id: int | None = None
  eos_token_ids: tuple[int, ...] = ()
  pad_token_id: int | None = None

  def __post_init__(self):
    if self.model_type != _TEXT_TYPE:
      raise ValueError(f"model_type {self.model_type!r} is not {_TEXT_TYPE!r}")
    if len(self.layer_types) != self.num_layers:
      raise ValueError(f"{len(self.layer_types)} layer_types for {self.num_layers} layers")
    bad = sorted(set(self.layer_types) - {LINEAR, FULL})
    if bad:
      raise ValueError(f"unknown layer types {bad}; valid: {LINEAR!r}, {FULL!r}")
    if self.num_heads % self.num_kv_heads:
      raise ValueError(f"num_heads={self.num_heads} is not a multiple of num_kv_heads={self.num_kv_heads}")
    if self.linear_num_value_heads % self.linear_num_key_heads:
      raise ValueError(f"linear_num_value_heads={self.linear_num_value_heads} is not a multiple of "
                       f"linear_num_key_heads={self.linear_num_key_heads}")
    if self.rotary_dim % 2 or self.rotary_dim == 0:
      raise ValueError(f"RoPE needs an even, non-zero rotary dim; head_dim={self.head_dim} x "
                       f"partial_rotary_factor={self.partial_rotary_factor} = {self.rotary_dim}")

  @property
  def rotary_dim(self) -> int:
    """Rotated dims per head: int(head_dim * partial_rotary_factor)."""
    return int(self.head_dim * self.partial_rotary_factor)

  def num_params(self) -> int:
    """Parameter count (embedding counted once when tied), for sizing presets and benchmarks."""
    h, d = self.hidden_size, self.head_dim
    q, kv = self.num_heads * d, self.num_kv_heads * d
    full = h * 2 * q + 2 * h * kv + q * h + 2 * d
    full += (2 * q + 2 * kv + h) * self.attention_bias
    key = self.linear_num_key_heads * self.linear_key_head_dim
    value = self.linear_num_value_heads * self.linear_value_head_dim
    conv = 2 * key + value
    linear = (h * conv + h * value + 2 * h * self.linear_num_value_heads + conv * self.linear_conv_kernel
              + 2 * self.linear_num_value_heads + self.linear_value_head_dim + value * h)
    mixers = sum(full if kind == FULL else linear for kind in self.layer_types)
    per_layer = 3 * h * self.intermediate_size + 2 * h
    head = 0 if self.tie_word_embeddings else self.vocab_size * h
    return self.vocab_size * h + mixers + self.num_layers * per_layer + h + head

  def replace(self, **changes) -> "Qwen35Config":
    """A copy with `changes` (field name -> value) applied and validated again."""
    return dataclasses.replace(self, **changes)

  @classmethod
  def from_hf(cls, hf: dict[str, Any]) -> "Qwen35Config":
    """Reads a parsed `config.json` of either layout (text-only, or full with `text_config`).

    Args:
      hf: the parsed `config.json`; absent fields take transformers' Qwen3_5TextConfig defaults.

    Returns:
      The Qwen35Config. A ValueError names a feature this port does not implement.
    """
    model_type = hf.get("model_type")
    if model_type == _FULL_TYPE:
      text = dict(hf.get("text_config") or {})
      tie = hf.get("tie_word_embeddings", text.get("tie_word_embeddings", False))
    elif model_type == _TEXT_TYPE:
      text, tie = hf, hf.get("tie_word_embeddings", False)
    else:
      raise ValueError(f"model_type {model_type!r} is not {_TEXT_TYPE!r} or {_FULL_TYPE!r}")
    if text.get("hidden_act", "silu") != "silu":
      raise ValueError(f"hidden_act {text['hidden_act']!r} is not implemented (only 'silu')")
    if text.get("attn_output_gate") is False:
      raise ValueError("attn_output_gate=false is not a Qwen3.5 layout")
    rope = dict(text.get("rope_parameters") or text.get("rope_scaling") or {})
    rope_type = rope.get("rope_type", rope.get("type", "default"))
    if rope_type != "default":
      raise ValueError(f"rope type {rope_type!r} is not implemented (only 'default')")
    layers = text.get("num_hidden_layers", 32)
    layer_types = text.get("layer_types") or default_layer_types(
        layers, text.get("full_attention_interval", 4))
    heads = text.get("num_attention_heads", 16)
    eos = text.get("eos_token_id", hf.get("eos_token_id"))
    eos = () if eos is None else tuple(eos) if isinstance(eos, (list, tuple)) else (eos,)
    section = rope.get("mrope_section")
    # transformers' defaults where a key is absent (Qwen3_5TextConfig).
    return cls(
        vocab_size=text.get("vocab_size", 248320),
        hidden_size=text.get("hidden_size", 4096),
        intermediate_size=text.get("intermediate_size", 12288),
        num_layers=layers,
        layer_types=tuple(layer_types),
        num_heads=heads,
        num_kv_heads=text.get("num_key_value_heads") or heads,
        head_dim=text.get("head_dim") or 256,
        attention_bias=bool(text.get("attention_bias", False)),
        rope_theta=float(rope.get("rope_theta", text.get("rope_theta", 10000.0))),
        partial_rotary_factor=float(rope.get("partial_rotary_factor",
                                             text.get("partial_rotary_factor", 0.25))),
        mrope_section=None if section is None else tuple(section),
        mrope_interleaved=bool(rope.get("mrope_interleaved", False)),
        linear_num_key_heads=text.get("linear_num_key_heads", 16),
        linear_num_value_heads=text.get("linear_num_value_heads", 32),
        linear_key_head_dim=text.get("linear_key_head_dim", 128),
        linear_value_head_dim=text.get("linear_value_head_dim", 128),
        linear_conv_kernel=text.get("linear_conv_kernel_dim", 4),
        rms_norm_eps=text.get("rms_norm_eps", 1e-6),
        tie_word_embeddings=bool(tie),
        max_position_embeddings=text.get("max_position_embeddings", 32768),
        bos_token_id=text.get("bos_token_id", hf.get("bos_token_id")),
        eos_token_ids=eos,
        pad_token_id=text.get("pad_token_id", hf.get("pad_token_id")),
    )

  def to_hf(self, dtype: str = "float32") -> dict[str, Any]:
    """A text-only `config.json` that transformers' `Qwen3_5ForCausalLM` reads back identically.

    Args:
      dtype: the weights' dtype name, written into the dict.

    Returns:
      The config.json dict.
    """
    rope = {"rope_type": "default", "rope_theta": self.rope_theta,
            "partial_rotary_factor": self.partial_rotary_factor}
    if self.mrope_section is not None:
      rope.update(mrope_section=list(self.mrope_section), mrope_interleaved=self.mrope_interleaved)
    eos = list(self.eos_token_ids)
    return {
        "architectures": ["Qwen3_5ForCausalLM"],
        "model_type": _TEXT_TYPE,
        "vocab_size": self.vocab_size,
        "hidden_size": self.hidden_size,
        "intermediate_size": self.intermediate_size,
        "num_hidden_layers": self.num_layers,
        "layer_types": list(self.layer_types),
        "num_attention_heads": self.num_heads,
        "num_key_value_heads": self.num_kv_heads,
        "head_dim": self.head_dim,
        "attention_bias": self.attention_bias,
        "attention_dropout": 0.0,
        "hidden_act": "silu",
        "rope_parameters": rope,
        "linear_num_key_heads": self.linear_num_key_heads,
        "linear_num_value_heads": self.linear_num_value_heads,
        "linear_key_head_dim": self.linear_key_head_dim,
        "linear_value_head_dim": self.linear_value_head_dim,
        "linear_conv_kernel_dim": self.linear_conv_kernel,
        "rms_norm_eps": self.rms_norm_eps,
        "tie_word_embeddings": self.tie_word_embeddings,
        "max_position_embeddings": self.max_position_embeddings,
        "bos_token_id": self.bos_token_id,
        "eos_token_id": eos[0] if len(eos) == 1 else (eos or None),
        "pad_token_id": self.pad_token_id,
        "dtype": dtype,
    }


# The real size follows Qwen/Qwen3.5-0.8B's config.json (text part); tiny ones serve tests/benchmarks.
# Looked up through `lib.models.preset`, one table with the other family's (lib/models/presets.py).
PRESETS: dict[str, Qwen35Config] = {
    "qwen3.5-0.8b": Qwen35Config(
        vocab_size=248320, hidden_size=1024, intermediate_size=3584, num_layers=24,
        layer_types=default_layer_types(24), num_heads=8, num_kv_heads=2, head_dim=256,
        rope_theta=1e7, partial_rotary_factor=0.25, mrope_section=(11, 11, 10),
        mrope_interleaved=True, linear_num_key_heads=16, linear_num_value_heads=16,
        linear_key_head_dim=128, linear_value_head_dim=128, tie_word_embeddings=True,
        max_position_embeddings=262144, eos_token_ids=(248044,)),
    # Grouped value heads (4 v per 2 k), head_dim != hidden/heads, partial RoPE; two hybrid groups.
    "qwen3.5-tiny": Qwen35Config(
        vocab_size=128, hidden_size=32, intermediate_size=64, num_layers=4,
        layer_types=(LINEAR, FULL, LINEAR, FULL), num_heads=4, num_kv_heads=2, head_dim=16,
        rope_theta=10000.0, partial_rotary_factor=0.5, linear_num_key_heads=2,
        linear_num_value_heads=4, linear_key_head_dim=8, linear_value_head_dim=8,
        tie_word_embeddings=False, max_position_embeddings=4096, deltanet_chunk=16),
    # ~20M parameters, the benchmark's model (the size of lib/models/qwen/config.py's "qwen3-20m").
    "qwen3.5-20m": Qwen35Config(
        vocab_size=8192, hidden_size=384, intermediate_size=1152, num_layers=8,
        layer_types=default_layer_types(8), num_heads=6, num_kv_heads=2, head_dim=64,
        rope_theta=1e7, partial_rotary_factor=0.25, linear_num_key_heads=4,
        linear_num_value_heads=8, linear_key_head_dim=64, linear_value_head_dim=64,
        tie_word_embeddings=False, max_position_embeddings=32768),
}
