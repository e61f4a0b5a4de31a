"""Toy host-loop text envs for mechanics tests, demos and benchmarks of the host loop.

  guess_env.py    GuessEnv: guess a hidden number (+ its scripted bisection policy)
  latency_env.py  LatencyEnv: each step only waits a fixed latency (executor benchmarks)
"""
