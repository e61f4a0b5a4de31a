"""Qwen2 / Qwen2.5 / Qwen3: `config.py` (QwenConfig, presets), `model.py` (the Flax NNX decoder and
the per-layer protocol other families reuse), `params.py` (the Hugging Face key table)."""
