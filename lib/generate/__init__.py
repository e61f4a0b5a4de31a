"""Generation: one jitted program per decode, no Python per token.

  sampling.py      batched KV-cache sampling (temperature, top-p, top-k, stop ids, log-probs)
  prefill.py       the prompt prefill (all rows or row chunks), the weights a rollout samples from
  token_choice.py  one decode step's token choice outside the model
  token_dfa.py     token-level DFAs for structured output (regex, JSON schema)
"""
