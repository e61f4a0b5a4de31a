"""Failures of the live backend itself (not refusals by the world), kept free of dependencies so
the closed loop can catch them without importing the Node bridge."""


class BackendFailure(RuntimeError):
  """The live server or bot driver crashed, timed out or answered nonsense mid-episode.

  The closed loop records the episode as SERVER_FAILURE; the runtime restarts the processes
  before the next episode."""


class NodeMissing(RuntimeError):
  """Node.js / npm is not installed, or the package's node_modules cannot be installed."""
