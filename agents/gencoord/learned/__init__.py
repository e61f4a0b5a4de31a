"""GenCoord learned backends: chat prompts, a DSL-aware tokenizer, SFT rows, training, backends.

  chat.py        model-visible LocalContext -> chat messages (one renderer for every backend)
  tokenizer.py   byte-level BPE whose pre-tokenizer keeps DSL argument groups whole
  recipes.py     which supervision rows each learned backend trains on (paper Table S6)
  sft_rows.py    rows -> token arrays with target-only loss masks
  train.py       SFT of a small Qwen3 from scratch or from a checkpoint (resumable)
  backend.py     the learned backend over lib.llm (Flax sampler or OpenAI-compatible endpoint)
"""
