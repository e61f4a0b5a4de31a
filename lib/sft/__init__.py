"""Supervised fine-tuning: one trainer in three modules.

  step.py     the causal-LM loss on target tokens and the jitted update step
  batches.py  examples -> batches as a function of the step index (resumable by construction)
  loop.py     the one SFT loop: resume, checkpoints, TensorBoard, validation
"""
