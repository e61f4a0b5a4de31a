"""Model backends behind one interface: chat conversations in, completions out.

  protocol.py       Backend / SamplingParams / Completion / Usage: the one interface
  flax_backend.py   FlaxBackend: our jit sampler over a local checkpoint (or the tiny default)
  openai_http.py    OpenAIBackend: OpenAI-compatible HTTP client (retries, backoff, concurrency)
  vllm_backend.py   VLLMBackend: vLLM in-process (lazy import, GPU only)
  scripted.py       ScriptedBackend: programmatic policies with an explicit seeded noise model
  factory.py        make_backend(config.backend): the backend a config names
"""
