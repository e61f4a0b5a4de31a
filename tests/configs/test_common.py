"""Typed `:key=value` config arguments."""
import pytest

from configs import common


def test_types_follow_defaults():
  c = common.parse_arg("n=3,lr=0.5,name=x,debug=True", n=1, lr=1.0, name="a", debug=False)
  assert (c.n, c.lr, c.name, c.debug) == (3, 0.5, "x", True)
  assert isinstance(c.n, int) and isinstance(c.lr, float)


def test_defaults_and_bare_boolean():
  c = common.parse_arg("debug", n=1, debug=False)
  assert c.debug is True and c.n == 1
  assert common.parse_arg(None, n=1).n == 1


@pytest.mark.parametrize("arg,match", [("m=1", "unknown config arg 'm'; valid: debug, n"),
                                       ("n=x", "expected int"),
                                       ("debug=maybe", "expected a boolean"),
                                       ("n", "needs a value")])
def test_bad_args_raise_with_valid_choices(arg, match):
  with pytest.raises(common.ConfigArgError, match=match):
    common.parse_arg(arg, n=1, debug=False)
