"""Benchmarks' shared pieces (the benchmarks themselves are configs under `configs/bench/`).

  rounds.py             interleaved A/B timing rounds and the machine state beside each ratio
  decode_throughput.py  greedy-decode throughput of our sampler against transformers
"""
