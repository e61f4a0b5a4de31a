"""The error every refused request raises: an HTTP status and an OpenAI-style error body."""


class RequestError(ValueError):
  """A request the server answers with `status` and an OpenAI-style error body."""

  def __init__(self, status: int, message: str, kind: str = "invalid_request_error",
               param: str | None = None, retry_after_s: float | None = None):
    super().__init__(message)
    self.status, self.kind, self.param, self.retry_after_s = status, kind, param, retry_after_s

  def body(self) -> dict:
    """The OpenAI error body: {"error": {"message", "type", "param", "code": status}}."""
    return {"error": {"message": str(self), "type": self.kind, "param": self.param,
                      "code": self.status}}
