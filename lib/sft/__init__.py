"""Supervised fine-tuning: one trainer in four modules.

  step.py       the causal-LM loss on target tokens and the jitted update step
  chat_rows.py  (messages, target) chat rows -> (prompt ids, target ids + EOS) examples
  batches.py    examples -> batches as a function of the step index (resumable by construction)
  loop.py       the one SFT loop: resume, checkpoints, TensorBoard, validation
"""
