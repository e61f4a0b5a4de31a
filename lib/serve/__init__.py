"""The OpenAI-compatible model server (`experiments/serve.py` runs it).

  admission.py  request parsing and validation, ServerLimits (400s naming limits)
  errors.py     RequestError (status + OpenAI error body)
  structured.py response_format / structured_outputs / guided_* -> one output regex
  tool_calls.py tools and tool_choice in Qwen's format: prompt rendering, <tool_call> parsing
  engine.py     FlaxEngine (chunked, cancellable sampling, n, seed, log-probs, prompt scoring)
  backend_engine.py  BackendEngine (any other Backend, chat only), make_engine
  policy.py     a served policy for RL rollouts: token-id client, in-process server, weight push
  weights.py    weight pushes into the served model (in process or /update_weights_from_disk)
  worker.py     ModelWorker: bounded queue, batching, cancellation, health
  responses.py  OpenAI response bodies and stream chunks
  responses_api.py  POST /v1/responses, routed through the chat path
  routes.py     what each POST route does between the HTTP transport and the worker
  httpd.py      OpenAIServer: routes, auth, body limits, streaming, timeouts, request logs
"""
from lib.serve.admission import RequestError, ServerLimits
from lib.serve.httpd import OpenAIServer

__all__ = ["OpenAIServer", "RequestError", "ServerLimits"]
