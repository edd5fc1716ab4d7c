"""Unit tests of the CEL subset evaluator used for CRD x-kubernetes-validations."""

from __future__ import annotations

from typing import Any

import pytest

from slicectl.sim.validation.cel import CelError, Unsupported, evaluate

SELECTOR_RULE = ("has(self.matchLabels) && size(self.matchLabels) > 0 || "
                 "has(self.matchExpressions) && size(self.matchExpressions) > 0")
PORT_RULE = ("type(self) == int ? (self >= 1 && self <= 65535) : "
             "self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')")


@pytest.mark.parametrize(("value", "expected"), [
    ({"matchLabels": {"a": "b"}}, True),
    ({"matchExpressions": [{"key": "a", "operator": "Exists"}]}, True),
    ({"matchLabels": {}}, False),
    ({}, False),
])
def test_selector_rule(value: dict[str, Any], expected: bool) -> None:
    assert evaluate(SELECTOR_RULE, {"self": value}) is expected


@pytest.mark.parametrize(("value", "expected"), [
    (80, True), (0, False), (65536, False), ("http", True), ("Http", False), ("-x", False),
])
def test_int_or_string_rule(value: Any, expected: bool) -> None:
    assert evaluate(PORT_RULE, {"self": value}) is expected


def test_unique_names_macros() -> None:
    unique = [{"name": "a"}, {"name": "b"}]
    dup = [{"name": "a"}, {"name": "a"}]
    rule = "self.all(x, self.exists_one(y, y.name == x.name))"
    assert evaluate(rule, {"self": unique}) is True
    assert evaluate(rule, {"self": dup}) is False
    assert evaluate("self.map(p, p.name)", {"self": dup}) == ["a", "a"]
    assert evaluate("self.filter(p, p.name == 'b').size() == 1", {"self": unique}) is True
    assert evaluate("self.exists(p, p.name == 'z')", {"self": unique}) is False


def test_in_and_literals() -> None:
    rule = "self.operator in ['In','NotIn','Exists','DoesNotExist']"
    assert evaluate(rule, {"self": {"operator": "In"}}) is True
    assert evaluate(rule, {"self": {"operator": "Gt"}}) is False
    assert evaluate("'a' in {'a': 1}", {}) is True
    assert evaluate("-7 / 2 == -3 && -7 % 2 == -1 && 1 + 2 * 3 == 7", {}) is True
    assert evaluate("!(1 < 2) || 'ab' + 'c' == \"abc\"", {}) is True
    assert evaluate("type(self) == string && int('42') == 42 && string(5) == '5'",
                    {"self": "x"}) is True


def test_error_absorption_like_cel() -> None:
    assert evaluate("self.missing == 1 || true", {"self": {}}) is True
    assert evaluate("false && self.missing == 1", {"self": {}}) is False
    with pytest.raises(CelError):
        evaluate("self.missing == 1", {"self": {}})


@pytest.mark.parametrize("rule", [
    "self.?x", "quantity('1') > 0", "self.x.y(", "url(self)", "self == ",
])
def test_unsupported_raises_unsupported(rule: str) -> None:
    with pytest.raises(Unsupported):
        evaluate(rule, {"self": {"x": 1}})
