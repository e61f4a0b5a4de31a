"""GenCoord learned policies: chat prompts, a DSL-aware tokenizer, SFT rows, training, policy.

  chat.py               model-visible LocalContext -> chat messages (one renderer for every model)
  tokenizer.py          byte-level BPE whose pre-tokenizer keeps DSL argument groups whole
  training_recipes.py   which supervision rows each learned policy trains on (paper Table S6)
  sft_rows.py           contrast groups of SFT rows (one world, every binding and role view)
  train.py              SFT of a small Qwen3 from scratch or from a checkpoint (resumable)
  policy.py             `LearnedPolicy` over lib.backends (Flax sampler or OpenAI endpoint)
  report.py             tables, figures and summary.md of `experiments/gencoord/learned.py`
  visibility_matrix.py  the task-structure visibility matrix (Figure S5) of that report
"""
