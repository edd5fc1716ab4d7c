"""Go's ``$`` in the embedded server's patterns: no match before a final newline.

On a real server ``pattern`` and CEL's ``matches()`` are Go regexps, whose ``$`` is the end of
the text; Python's ``$`` also matches before a trailing ``\\n``, which let ``"http\\n"`` pass a
CRD's ``^[a-z]+$`` here and not there.
"""

from __future__ import annotations

import pytest

from slicectl.sim.validation import validate
from slicectl.sim.validation.cel import evaluate
from slicectl.sim.validation.goregex import go_regex
from slicectl.sim.validation.gotime import RFC3339
from tests.sim.test_validation import CR, cr, fields


@pytest.mark.parametrize(("pattern", "text", "matched"), [
    ("^[a-z]+$", "abc", True),
    ("^[a-z]+$", "abc\n", False),
    ("^a$|^b$", "b\n", False),
    ("[$]", "$", True),  # a $ inside a class is a character
    ("a\\$", "a$", True),  # and so is an escaped one
    ("[]$]x", "$x", True),  # "]" first in a class is a member, the class goes on
    ("[^]$]x", "ax", True),
    ("a\\z", "a\n", False),  # Go's \z, which Python spells \Z
    ("(?m)^a$", "a\nb", True),  # with the m flag $ is any line's end, in both
    ("^\\d+$", "\u0661\u0662", False),  # RE2's \d is ASCII; Python's takes any digit
    ("^\\w+$", "\u00e9", False),
    ("^\\s$", "\v", False),  # RE2's \s has no vertical tab
    ("^[a-z\\s]+$", "a\vb", False),
    ("^[a-z\\s]+$", "a \tb", True),
    ("^\\S+$", "a\vb", True),  # so its \S takes one
    ("(?m)^a\\z", "a", True),  # \z with the m flag too
])
def test_dollar_is_the_end_of_the_text(pattern: str, text: str, matched: bool) -> None:
    assert (go_regex(pattern).search(text) is not None) is matched


def test_timestamps_take_ascii_digits_only() -> None:
    assert RFC3339.fullmatch("2024-01-01T00:00:00Z") is not None
    assert RFC3339.fullmatch("\u0662024-01-01T00:00:00Z") is None


def test_cel_matches_follows_go() -> None:
    assert evaluate("self.matches('^[a-z]+$')", {"self": "abc"}) is True
    assert evaluate("self.matches('^[a-z]+$')", {"self": "abc\n"}) is False


def test_a_schema_pattern_refuses_a_trailing_newline() -> None:
    bad = cr({"selector": {"matchLabels": {"app": "x"}},
              "ports": [{"name": "http\n", "targetPort": 80}]})
    assert ("spec.ports[0].name", "FieldValueInvalid") in fields(validate(CR, bad, None))
