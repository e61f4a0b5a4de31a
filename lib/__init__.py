"""Accord's shared core, one subpackage per concept. Lower layers never import higher ones
(`tests/test_import_graph.py` checks the order below), and nothing here imports `envs`, `agents`,
`experiments` or `configs`.

  run/       what every run shares: console, progress, TensorBoard, results, stages, config blocks
  report/    statistics and paper figures
  parallel/  the device mesh, sharding of states and batches, multi-process JAX
  models/    Qwen2/3/3.5 in Flax NNX, HF weights, tokenizers, the model builder, log-probs
  train/     train state, optimizer, checkpoints, the model + state setup every trainer shares
  generate/  the jitted KV-cache sampler, its per-step token choice and token-DFA constraints
  sft/       supervised fine-tuning: the step, batches, the loop
  rl/        GRPO and OPSD: losses, the generalized JSD, the trainers and their loop
  plan/      before a run: memory plans (analytic, compiled for CPU/GPU/TPU), roofline, input checks
  bench/     benchmark rounds and decode throughput
  backends/  model backends behind one interface: Flax, OpenAI HTTP, vLLM, scripted
  hostloop/  the batched host loop, its agent protocol and env executors (inline, processes, Ray)
  serve/     the OpenAI-compatible server
"""
