"""Generation: one jitted program per decode, no Python per token.

  sampling.py      batched KV-cache sampling (temperature, top-p, top-k, stop ids, log-probs)
  token_choice.py  one decode step's token choice outside the model
  token_dfa.py     token-level DFAs for structured output (regex, JSON schema)
"""
