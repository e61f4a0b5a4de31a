"""Qwen2/Qwen3 architecture config, mapped 1:1 to and from a Hugging Face `config.json`.

Qwen2 (and Qwen2.5) and Qwen3 share one decoder; they differ in three switches:
  Qwen2: q/k/v projections carry a bias, o_proj does not, no q/k norm, head_dim = hidden / heads.
  Qwen3: `attention_bias` (False in every released model) applies to q/k/v/o alike, per-head RMSNorm
         on q and k before RoPE, explicit `head_dim`.
"""
import dataclasses
from typing import Any

_SUPPORTED_TYPES = ("qwen2", "qwen3")


def _required(hf: dict[str, Any], field: str):
  """hf[field], or a ValueError naming the field (the loader prefixes the file's path)."""
  if hf.get(field) is None:
    raise ValueError(f"missing field {field!r}")
  return hf[field]


@dataclasses.dataclass(frozen=True)
class QwenConfig:
  """Architecture hyper-parameters; field names follow our modules, `from_hf`/`to_hf` translate."""
  model_type: str = "qwen3"
  vocab_size: int = 151936
  hidden_size: int = 1024
  intermediate_size: int = 3072
  num_layers: int = 28
  num_heads: int = 16
  num_kv_heads: int = 8
  head_dim: int = 128
  rope_theta: float = 1_000_000.0
  rms_norm_eps: float = 1e-6
  tie_word_embeddings: bool = True
  qkv_bias: bool = False
  o_bias: bool = False
  qk_norm: bool = True
  max_position_embeddings: int = 40960
  bos_token_id: int | None = None
  eos_token_ids: tuple[int, ...] = ()
  pad_token_id: int | None = None

  def __post_init__(self):
    if self.model_type not in _SUPPORTED_TYPES:
      raise ValueError(f"model_type {self.model_type!r} is not one of {_SUPPORTED_TYPES}")
    if self.num_heads % self.num_kv_heads:
      raise ValueError(f"num_heads={self.num_heads} is not a multiple of num_kv_heads={self.num_kv_heads}")
    if self.head_dim % 2:
      raise ValueError(f"RoPE needs an even head_dim, got {self.head_dim}")

  def replace(self, **changes) -> "QwenConfig":
    """A copy with `changes` (field name -> value) applied and validated again."""
    return dataclasses.replace(self, **changes)

  def num_params(self) -> int:
    """Parameter count (embedding counted once when tied), for sizing presets and benchmarks."""
    h, d = self.hidden_size, self.head_dim
    q, kv = self.num_heads * d, self.num_kv_heads * d
    attn = h * q + 2 * h * kv + q * h
    attn += (q + 2 * kv) * self.qkv_bias + h * self.o_bias + 2 * d * self.qk_norm
    layer = attn + 3 * h * self.intermediate_size + 2 * h
    head = 0 if self.tie_word_embeddings else self.vocab_size * h
    return self.vocab_size * h + self.num_layers * layer + h + head

  @classmethod
  def from_hf(cls, hf: dict[str, Any]) -> "QwenConfig":
    """Reads a parsed Hugging Face `config.json`.

    Args:
      hf: the parsed `config.json` of a Qwen2/Qwen2.5/Qwen3 checkpoint.

    Returns:
      The QwenConfig. A ValueError names a missing field (`missing field 'hidden_size'`) or a
      feature this port does not implement.
    """
    model_type = hf.get("model_type")
    if model_type not in _SUPPORTED_TYPES:
      raise ValueError(f"model_type {model_type!r} is not one of {_SUPPORTED_TYPES}")
    if hf.get("use_sliding_window"):
      raise ValueError("sliding-window attention (use_sliding_window=true) is not implemented")
    rope = hf.get("rope_parameters") or hf.get("rope_scaling") or {}
    rope_type = rope.get("rope_type", rope.get("type", "default"))
    if rope_type != "default":
      raise ValueError(f"rope type {rope_type!r} is not implemented (only 'default')")
    rope_theta = rope.get("rope_theta", hf.get("rope_theta", 10000.0))
    heads = _required(hf, "num_attention_heads")
    hidden = _required(hf, "hidden_size")
    eos = hf.get("eos_token_id")
    eos = () if eos is None else tuple(eos) if isinstance(eos, (list, tuple)) else (eos,)
    if model_type == "qwen2":
      qkv_bias, o_bias, qk_norm = True, False, False
    else:
      qkv_bias = o_bias = bool(hf.get("attention_bias", False))
      qk_norm = True
    return cls(
        model_type=model_type,
        vocab_size=_required(hf, "vocab_size"),
        hidden_size=hidden,
        intermediate_size=_required(hf, "intermediate_size"),
        num_layers=_required(hf, "num_hidden_layers"),
        num_heads=heads,
        num_kv_heads=hf.get("num_key_value_heads") or heads,
        head_dim=hf.get("head_dim") or hidden // heads,
        rope_theta=float(rope_theta),
        rms_norm_eps=hf.get("rms_norm_eps", 1e-6),
        tie_word_embeddings=hf.get("tie_word_embeddings", model_type == "qwen2"),
        qkv_bias=qkv_bias, o_bias=o_bias, qk_norm=qk_norm,
        max_position_embeddings=hf.get("max_position_embeddings", 32768),
        bos_token_id=hf.get("bos_token_id"),
        eos_token_ids=eos,
        pad_token_id=hf.get("pad_token_id"),
    )

  def to_hf(self, dtype: str = "float32") -> dict[str, Any]:
    """A `config.json` dict that transformers 4.x/5.x and vLLM read back to the same architecture.

    Args:
      dtype: the weights' dtype name, written as "dtype" and "torch_dtype".

    Returns:
      The dict. A ValueError when the bias/qk_norm flags do not fit `model_type`.
    """
    if self.model_type == "qwen2" and (not self.qkv_bias or self.o_bias or self.qk_norm):
      raise ValueError("qwen2 checkpoints need qkv_bias=True, o_bias=False, qk_norm=False")
    if self.model_type == "qwen3" and (self.qkv_bias != self.o_bias or not self.qk_norm):
      raise ValueError("qwen3 checkpoints need qkv_bias == o_bias and qk_norm=True")
    eos = list(self.eos_token_ids)
    hf = {
        "architectures": ["Qwen2ForCausalLM" if self.model_type == "qwen2" else "Qwen3ForCausalLM"],
        "model_type": self.model_type,
        "vocab_size": self.vocab_size,
        "hidden_size": self.hidden_size,
        "intermediate_size": self.intermediate_size,
        "num_hidden_layers": self.num_layers,
        "num_attention_heads": self.num_heads,
        "num_key_value_heads": self.num_kv_heads,
        "head_dim": self.head_dim,
        "hidden_act": "silu",
        "rms_norm_eps": self.rms_norm_eps,
        # Both spellings: transformers 5 reads `rope_parameters`, 4.x and older vLLM read `rope_theta`.
        "rope_theta": self.rope_theta,
        "rope_parameters": {"rope_type": "default", "rope_theta": self.rope_theta},
        "tie_word_embeddings": self.tie_word_embeddings,
        "max_position_embeddings": self.max_position_embeddings,
        "use_sliding_window": False,
        "sliding_window": None,
        "attention_dropout": 0.0,
        "bos_token_id": self.bos_token_id,
        "eos_token_id": eos[0] if len(eos) == 1 else (eos or None),
        "pad_token_id": self.pad_token_id,
        "dtype": dtype,
        "torch_dtype": dtype,
    }
    if self.model_type == "qwen3":
      hf["attention_bias"] = self.qkv_bias
    return hf


def _qwen2(**kw) -> QwenConfig:
  base = dict(qkv_bias=True, o_bias=False, qk_norm=False, rope_theta=1e6, max_position_embeddings=32768)
  return QwenConfig(model_type="qwen2", **{**base, **kw})


def _qwen3(**kw) -> QwenConfig:
  base = dict(qkv_bias=False, o_bias=False, qk_norm=True, rope_theta=1e6, max_position_embeddings=40960)
  return QwenConfig(model_type="qwen3", **{**base, **kw})


# Real sizes follow the released config.json files on the Hugging Face Hub (Qwen/<name>); the tiny
# ones exist for tests and benchmarks.
# Looked up through `lib.models.preset`, one table with the other family's (lib/models/presets.py).
PRESETS: dict[str, QwenConfig] = {
    "qwen2.5-0.5b": _qwen2(vocab_size=151936, hidden_size=896, intermediate_size=4864, num_layers=24,
                           num_heads=14, num_kv_heads=2, head_dim=64, tie_word_embeddings=True),
    "qwen2.5-1.5b": _qwen2(vocab_size=151936, hidden_size=1536, intermediate_size=8960, num_layers=28,
                           num_heads=12, num_kv_heads=2, head_dim=128, tie_word_embeddings=True),
    "qwen2.5-7b": _qwen2(vocab_size=152064, hidden_size=3584, intermediate_size=18944, num_layers=28,
                         num_heads=28, num_kv_heads=4, head_dim=128, tie_word_embeddings=False),
    "qwen3-0.6b": _qwen3(vocab_size=151936, hidden_size=1024, intermediate_size=3072, num_layers=28,
                         num_heads=16, num_kv_heads=8, head_dim=128, tie_word_embeddings=True),
    "qwen3-1.7b": _qwen3(vocab_size=151936, hidden_size=2048, intermediate_size=6144, num_layers=28,
                         num_heads=16, num_kv_heads=8, head_dim=128, tie_word_embeddings=True),
    "qwen3-4b": _qwen3(vocab_size=151936, hidden_size=2560, intermediate_size=9728, num_layers=36,
                       num_heads=32, num_kv_heads=8, head_dim=128, tie_word_embeddings=True),
    "qwen3-8b": _qwen3(vocab_size=151936, hidden_size=4096, intermediate_size=12288, num_layers=36,
                       num_heads=32, num_kv_heads=8, head_dim=128, tie_word_embeddings=False),
    # Qwen/Qwen3-32B config.json: hidden 5120, 64 layers, 64 q / 8 kv heads of 128, MLP 25600.
    "qwen3-32b": _qwen3(vocab_size=151936, hidden_size=5120, intermediate_size=25600, num_layers=64,
                        num_heads=64, num_kv_heads=8, head_dim=128, tie_word_embeddings=False),
    # Qwen/Qwen3-Embedding-8B config.json (the Qwen3-8B trunk, vocab 151665). Its checkpoint holds
    # no lm_head (embeddings come from the last hidden state), so the head is tied here: the
    # parameter count is the checkpoint's 7.57B, not Qwen3-8B's 8.19B.
    "qwen3-embedding-8b": _qwen3(vocab_size=151665, hidden_size=4096, intermediate_size=12288,
                                 num_layers=36, num_heads=32, num_kv_heads=8, head_dim=128,
                                 tie_word_embeddings=True),
    "qwen3-embedding-0.6b": _qwen3(vocab_size=151669, hidden_size=1024, intermediate_size=3072,
                                   num_layers=28, num_heads=16, num_kv_heads=8, head_dim=128,
                                   tie_word_embeddings=True, max_position_embeddings=32768),
    # Tiny models: GQA everywhere, head_dim != hidden/heads for qwen3, tied for qwen2 (as the real ones).
    "qwen2-tiny": _qwen2(vocab_size=128, hidden_size=32, intermediate_size=64, num_layers=2,
                         num_heads=4, num_kv_heads=2, head_dim=8, tie_word_embeddings=True,
                         rope_theta=10000.0),
    "qwen3-tiny": _qwen3(vocab_size=128, hidden_size=32, intermediate_size=64, num_layers=2,
                         num_heads=4, num_kv_heads=2, head_dim=16, tie_word_embeddings=False,
                         rope_theta=10000.0),
    # ~20M parameters: the sampler benchmark's model.
    "qwen3-20m": _qwen3(vocab_size=8192, hidden_size=384, intermediate_size=1152, num_layers=8,
                        num_heads=6, num_kv_heads=2, head_dim=64, tie_word_embeddings=False),
}
