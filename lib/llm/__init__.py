"""Model backends behind one interface, and the batched host loop that drives agents with them.

  backend.py      Backend / SamplingParams / Completion / Usage (the interface)
  scripted.py     ScriptedBackend: programmatic policies with an explicit seeded noise model
  openai_http.py  OpenAIBackend: OpenAI-compatible HTTP client (retries, backoff, concurrency)
  flax_backend.py FlaxBackend: our sampler over a local Flax checkpoint
  vllm_backend.py VLLMBackend: vLLM in-process (lazy import, GPU only)
  agent.py        the agent <-> loop protocol (ModelRequest / Act), host-loop env adapter
  host_loop.py    HostLoop: all live episodes' requests in one backend call per step
  factory.py      make_backend(config) from a config dict
"""
from lib.llm.backend import (Backend, BackendUnavailable, Completion, SamplingParams, Usage,
                             failed)
