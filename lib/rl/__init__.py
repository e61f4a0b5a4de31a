"""Reinforcement learning and distillation on sampled responses.

  losses.py   group advantages, the clipped policy-gradient loss, k3 KL, entropy, aggregation
  jsd.py      the generalized Jensen-Shannon divergence of on-policy distillation (also chunked)
  trainer.py  what the GRPO and OPSD trainers share: the frozen copy, jitted and mesh steps
  grpo.py     GRPO: prompts -> groups of samples -> rewards -> clipped updates
  opsd.py     OPSD: student samples, a frozen teacher scores, JSD updates
  agentic.py  multi-turn episodes: returns, episode (GRPO) and step (GiGPO) advantages, the
              token-in/token-out batch of per-call rows and its GRPO update
  loop.py     the one RL loop: resume, build the trainer, iterate, evaluate, log, checkpoint
"""
