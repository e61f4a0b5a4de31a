"""`BackendEngine`: any other `Backend` (scripted policies, a remote API) behind the server,
through `backend.generate`: chat only (tools rendered into the messages in Qwen's format), no
log-probs, no structured output, no cancellation inside a batch; and
`make_engine`, which picks the engine for a backend."""
from lib.backends.flax_backend import FlaxBackend
from lib.backends.protocol import Backend
from lib.serve import tool_calls
from lib.serve.engine import Choice, Engine, FlaxEngine, Generation, generate_isolated
from lib.serve.errors import RequestError


class BackendEngine:
  """Any `Backend` behind the server: chat completions and embeddings, no log-probs."""

  supports_logprobs = False
  supports_completions = False
  context_length = None

  def __init__(self, backend: Backend):
    self.backend, self.usage = backend, backend.usage

  def prompt_ids(self, request):
    """Always None: the backend tokenizes (if at all) on its side.
    Args: request: unused."""
    return None

  def compile_constraint(self, request):
    """Not supported: raises RequestError 400 naming the request's regex field.
    Args: request: a request with a regex."""
    raise RequestError(400, f"{request.regex_field}: structured output needs the flax backend",
                       param=request.regex_field)

  def token_text(self, token_id):
    """Not supported (no log-probs): raises NotImplementedError.
    Args: token_id: unused."""
    raise NotImplementedError

  def count_tokens(self, texts):
    """Always None: this engine cannot count tokens.
    Args: texts: unused."""
    return None

  def embed(self, texts):
    """The backend's embeddings [len(texts), D] float32 (raises where it has none).
    Args: texts: the input strings."""
    return self.backend.embed(texts)

  def generate(self, requests, stop_rows, progress):
    """Answers chat requests through `backend.generate`, n conversations per request.

    Args:
      requests: admitted chat GenerationRequests.
      stop_rows: () -> per request, whether it was cancelled (checked only on retries).
      progress: called once before the batch.
    Returns:
      Per request a Generation, Cancelled, or the Exception that failed it alone.
    """
    progress()

    def run(pick):
      convs, params, owners = [], [], []
      for i in pick:
        r = requests[i]
        for j in range(r.n):  # n choices: n conversations, seeds spread so they differ
          seed = None if r.params.seed is None else r.params.seed + j
          convs.append(tool_calls.render_messages(r.prompt, r.tools))
          params.append(r.params.replace(seed=seed) if r.n > 1 else r.params)
          owners.append(i)
      answers = {i: Generation([], 0, 0) for i in pick}
      for i, c in zip(owners, self.backend.generate(convs, params)):
        if not c.ok:
          raise RuntimeError(f"{c.error}: {c.error_detail}")
        a = answers[i]
        a.choices.append(Choice(c.text, c.finish_reason or "stop", []))
        a.prompt_tokens = c.input_tokens
        a.completion_tokens = (None if c.output_tokens is None or a.completion_tokens is None
                               else a.completion_tokens + c.output_tokens)
      return [answers[i] for i in pick]

    return generate_isolated(run, requests, stop_rows)


def make_engine(backend: Backend, chunk_size: int = 16, max_batch: int = 32,
                max_constraint_cells: int = 1 << 25) -> Engine:
  """The engine for `backend`.

  Args:
    backend: a FlaxBackend gets FlaxEngine (chunked, cancellable, log-probs); any other
      Backend gets BackendEngine.
    chunk_size: decode steps between cancellation checks (FlaxEngine).
    max_batch: rows per sampler call (FlaxEngine).
    max_constraint_cells: bound on a structured-output table's states x token classes.
  Returns:
    An Engine.
  """
  if isinstance(backend, FlaxBackend):
    return FlaxEngine(backend, chunk_size=chunk_size, max_batch=max_batch,
                      max_constraint_cells=max_constraint_cells)
  return BackendEngine(backend)

