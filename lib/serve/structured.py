"""Structured-output fields of a request -> the one regex its output must match.

OpenAI's `response_format` ({"type": "text" | "json_object" | "json_schema"}) and vLLM's extension
fields: `structured_outputs` ({"regex" | "json" | "choice" | "json_object"}, vLLM's current name)
and the legacy `guided_regex`, `guided_json`, `guided_choice` (vLLM < 0.12). The engine compiles the
regex into a token DFA (`lib.generate.token_dfa`) that the sampler enforces on device. Grammars
(`structured_outputs.grammar`, `guided_grammar`) and structural tags are not supported and are
refused by name.
"""
import json

from lib.generate import token_dfa
from lib.serve.errors import RequestError

FIELDS = ("response_format", "structured_outputs", "guided_regex", "guided_json",
          "guided_choice")
_SO_KEYS = ("regex", "json", "choice", "json_object")


def _choice_regex(choices, field: str) -> str:
  if not isinstance(choices, list) or not choices or not all(
      isinstance(c, str) and c for c in choices):
    raise RequestError(400, f"{field} must be a non-empty list of non-empty strings", param=field)
  return "(" + "|".join(token_dfa.escape(c) for c in choices) + ")"


def _schema_regex(schema, field: str) -> str:
  if isinstance(schema, str):
    try:
      schema = json.loads(schema)
    except ValueError:
      raise RequestError(400, f"{field} is not valid JSON", param=field) from None
  if not isinstance(schema, dict):
    raise RequestError(400, f"{field} must be a JSON schema object", param=field)
  try:
    return token_dfa.json_schema_regex(schema)
  except token_dfa.ConstraintError as e:
    raise RequestError(400, f"{field}: {e}", param=field) from None


def _response_format(fmt) -> str | None:
  if fmt is None:
    return None
  kind = fmt.get("type") if isinstance(fmt, dict) else None
  if kind == "text" and set(fmt) == {"type"}:
    return None
  if kind == "json_object" and set(fmt) == {"type"}:
    return token_dfa.json_object_regex()
  if kind == "json_schema":
    spec = fmt.get("json_schema")
    if not isinstance(spec, dict) or "schema" not in spec or set(fmt) != {"type", "json_schema"}:
      raise RequestError(400, "response_format json_schema needs {\"type\": \"json_schema\", "
                              "\"json_schema\": {\"name\": ..., \"schema\": {...}}}",
                         param="response_format")
    return _schema_regex(spec["schema"], "response_format.json_schema.schema")
  raise RequestError(400, "response_format must be {\"type\": \"text\"}, {\"type\": "
                          "\"json_object\"} or {\"type\": \"json_schema\", \"json_schema\": "
                          "{...}}", param="response_format")


def _structured_outputs(so) -> str | None:
  if not isinstance(so, dict):
    raise RequestError(400, "structured_outputs must be an object", param="structured_outputs")
  extra = sorted(set(so) - set(_SO_KEYS))
  if extra:
    raise RequestError(400, f"structured_outputs: unsupported key(s) {', '.join(extra)} (this "
                            f"server supports {', '.join(_SO_KEYS)})", param="structured_outputs")
  given = [k for k in _SO_KEYS if so.get(k) not in (None, False)]
  if len(given) > 1:
    raise RequestError(400, f"structured_outputs: give one of {', '.join(_SO_KEYS)}, got "
                            f"{', '.join(given)}", param="structured_outputs")
  if not given:
    return None
  key, value = given[0], so[given[0]]
  if key == "regex":
    if not isinstance(value, str) or not value:
      raise RequestError(400, "structured_outputs.regex must be a non-empty string",
                         param="structured_outputs")
    return value
  if key == "json":
    return _schema_regex(value, "structured_outputs.json")
  if key == "choice":
    return _choice_regex(value, "structured_outputs.choice")
  if value is not True:
    raise RequestError(400, "structured_outputs.json_object must be true",
                       param="structured_outputs")
  return token_dfa.json_object_regex()


def output_regex(body: dict) -> tuple[str | None, str | None]:
  """The regex a body's structured-output fields demand.

  Args:
    body: the decoded JSON object (chat or completions).
  Returns:
    (regex, the field it came from), or (None, None) when the output is free.
  Raises:
    RequestError: 400 naming the field: a malformed value, an unsupported key, or more than one
      structured-output field.
  """
  found = []
  for field in FIELDS:
    value = body.get(field)
    if value is None:
      continue
    if field == "response_format":
      regex = _response_format(value)
    elif field == "structured_outputs":
      regex = _structured_outputs(value)
    elif field == "guided_regex":
      if not isinstance(value, str) or not value:
        raise RequestError(400, "guided_regex must be a non-empty string", param=field)
      regex = value
    elif field == "guided_json":
      regex = _schema_regex(value, field)
    else:
      regex = _choice_regex(value, field)
    if regex is not None:
      found.append((regex, field))
  if len(found) > 1:
    raise RequestError(400, f"give one structured-output field, got {found[0][1]} and "
                            f"{found[1][1]}", param=found[1][1])
  return found[0] if found else (None, None)
