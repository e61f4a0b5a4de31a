"""What every trainer (SFT, GRPO, OPSD) shares.

  state.py       the train-state pytree, the `apply_fn` protocol, row-chunked scoring
  optim.py       AdamW with warm-up + cosine/constant schedule, clipping, micro-batch accumulation
  checkpoint.py  orbax checkpoints of train states, with fallback past a damaged step
  setup.py       model + train state from a config's `model` / `mesh` blocks, resuming
"""
