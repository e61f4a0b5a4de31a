"""Message roles at admission (lib/serve/admission.py, lib/serve/responses_api.py): the
`developer` role newer OpenAI clients send is the system turn; an unknown role is a 400 naming
the valid ones."""
import pytest

from lib.serve import ServerLimits
from lib.serve.admission import RequestError, parse_chat
from lib.serve.responses_api import parse_response

USER = {"role": "user", "content": "Reply with one integer."}


def test_developer_is_the_system_turn_in_chat():
  request = parse_chat({"messages": [{"role": "developer", "content": "Be brief."}, USER]},
                       "accord", ServerLimits())
  assert request.prompt == [{"role": "system", "content": "Be brief."}, USER]


def test_developer_is_the_system_turn_in_responses_input():
  body = {"input": [{"role": "developer", "content": [{"type": "input_text", "text": "Be brief."}]},
                    USER]}
  request = parse_response(body, "accord", ServerLimits())
  assert request.prompt == [{"role": "system", "content": "Be brief."}, USER]
  assert request.kind == "response"


@pytest.mark.parametrize("role", ["critic", None, ["user"]])
def test_unknown_role_is_a_400_naming_the_valid_ones(role):
  with pytest.raises(RequestError, match=r"messages\[1\] needs a role in .*'developer'") as err:
    parse_chat({"messages": [USER, {"role": role, "content": "x"}]}, "accord", ServerLimits())
  assert err.value.status == 400
