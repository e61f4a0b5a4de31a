"""Model backends behind one interface, and the batched host loop that drives agents with them.

  backend.py        Backend / SamplingParams / Completion / Usage: the interface
  scripted.py       ScriptedBackend: programmatic policies with an explicit seeded noise model
  openai_http.py    OpenAIBackend: OpenAI-compatible HTTP client (retries, backoff, concurrency)
  server/           OpenAIServer: OpenAI-compatible HTTP server over any Backend (admission,
                    batching, cancellation, streaming; see server/__init__.py)
  flax_backend.py   FlaxBackend: our jit sampler over a local Flax checkpoint (or the tiny default)
  vllm_backend.py   VLLMBackend: vLLM in-process (lazy import, GPU only)
  factory.py        make_backend(config.backend): backends from config
  agent.py          the agent <-> loop protocol (ModelRequest / Act), the host-loop env protocol
  host_loop.py      HostLoop: every live episode's request in one backend call per step
  prompt_agent.py   PromptAgent: the minimal one-role reference agent
  guess_env.py      GuessEnv: a tiny text env (+ its scripted bisection policy) for mechanics tests
"""
from lib.llm.backend import (Backend, BackendUnavailable, Completion, SamplingParams, Usage,
                             failed)
