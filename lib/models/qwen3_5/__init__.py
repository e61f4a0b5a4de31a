"""Qwen3.5 text decoder: `config.py` (Qwen35Config, presets), `model.py` (the hybrid stack on top
of `lib.models.qwen.model`), `deltanet.py` (Gated DeltaNet), `params.py` (the Hugging Face key
table)."""
