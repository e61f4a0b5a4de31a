"""vLLM in-process backend (GPU only). `vllm` is imported when the backend is built, not before,
so CPU installs never need it; without it (or without a GPU) construction raises
`BackendUnavailable` saying what is missing.

A batch of conversations goes to `LLM.chat` in one call (vLLM schedules it continuously); one
`vllm.SamplingParams` is built per request, so per-request seeds and limits are honoured. Token
usage comes from the prompt and output token ids vLLM returns. Embeddings need a model loaded with
`runner="pooling"` (vLLM >= 0.10; `task="embed"` before) and use `LLM.embed`.
"""
import importlib
import time

import numpy as np

from lib.backends.protocol import Backend, BackendUnavailable, Completion, SamplingParams


def _import_vllm():
  try:
    return importlib.import_module("vllm")
  except ImportError as e:
    raise BackendUnavailable(
        "the vLLM backend needs the `vllm` package and a CUDA GPU; install with "
        "`pip install -e '.[gpu]'`, or use kind='flax' (CPU/TPU) or kind='openai_http' "
        f"against a vLLM server ({type(e).__name__}: {e})") from None


def _has_gpu() -> bool:
  try:
    torch = importlib.import_module("torch")
  except ImportError:
    return False
  return bool(torch.cuda.is_available())


class VLLMBackend(Backend):
  """`LLM(model=path, **engine_kwargs)` behind the Backend interface.

  Args:
    model: model path or Hugging Face id passed to `vllm.LLM`.
    embed: load for embeddings (sets engine_kwargs["runner"] = "pooling" unless given).
    seed: engine seed; per-request seeds come from SamplingParams.seed.
    chat_template_kwargs: passed to `LLM.chat`, e.g. {"enable_thinking": False}.
    **engine_kwargs: further `vllm.LLM` arguments.
  Raises BackendUnavailable without vllm or a CUDA GPU.
  """

  name = "vllm"

  def __init__(self, model: str, *, embed: bool = False, seed: int = 0,
               chat_template_kwargs: dict | None = None, **engine_kwargs):
    super().__init__()
    vllm = _import_vllm()
    if not _has_gpu():
      raise BackendUnavailable("the vLLM backend needs a CUDA GPU and torch.cuda reports none; "
                               "use kind='flax' on CPU")
    self._vllm = vllm
    if embed:
      engine_kwargs.setdefault("runner", "pooling")
    self.llm = vllm.LLM(model=model, seed=seed, **engine_kwargs)
    self.chat_template_kwargs = dict(chat_template_kwargs or {})

  def _params(self, p: SamplingParams):
    if p.regex is not None:
      raise ValueError("the in-process vllm backend does not take regex constraints; serve the "
                       "model with vLLM and use the openai_http backend (structured_outputs)")
    return self._vllm.SamplingParams(max_tokens=p.max_tokens, temperature=p.temperature,
                                     top_p=p.top_p, top_k=p.top_k if p.top_k > 0 else -1,
                                     stop=list(p.stop) or None, seed=p.seed)

  def _generate(self, conversations, params):
    start = time.perf_counter()
    extra = {"chat_template_kwargs": self.chat_template_kwargs} if self.chat_template_kwargs else {}
    outputs = self.llm.chat(conversations, sampling_params=[self._params(p) for p in params],
                            use_tqdm=False, **extra)
    latency = time.perf_counter() - start
    out = []
    for o in outputs:
      choice = o.outputs[0]
      out.append(Completion(text=choice.text, input_tokens=len(o.prompt_token_ids or []),
                            output_tokens=len(choice.token_ids), latency_s=latency,
                            finish_reason=choice.finish_reason))
    return out

  def _embed(self, texts):
    outputs = self.llm.embed(texts, use_tqdm=False)
    vecs = np.asarray([o.outputs.embedding for o in outputs], np.float32)
    return vecs / np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
