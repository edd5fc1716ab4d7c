"""A CRD whose CEL rule does not compile is refused, with cel-go's own error text.

Every expected message below was printed by the real apiextensions validation code
(``validation.ValidateCustomResourceDefinition`` of k8s.io/apiextensions-apiserver 0.36.4, built
from Debian's golang-k8s-apiextensions-apiserver-dev on 2026-11-24) for the same CRD; only the
rule's printed value in front of it is the embedded server's own (Go's ``%#v`` of the rule, as
a v1.32 server prints it). Before slicectl.sim.validation.cel_check, the embedded server
accepted every one of these CRDs.
"""

from __future__ import annotations

import contextlib
from typing import Any

import pytest

from slicectl.sim.validation.cel import CelError, evaluate
from slicectl.sim.validation.cel_check import SIGNATURES
from slicectl.sim.validation.crd import validate_crd
from tests.sim.conftest import Raw

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
WHERE = "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule"


def _spec_schema() -> dict[str, Any]:
    def text() -> dict[str, Any]:
        return {"type": "string", "maxLength": 20}

    return {"type": "object", "properties": {
        "s": text(),
        "l": {"type": "array", "maxItems": 10, "items": text()},
        "m": {"type": "object", "maxProperties": 5, "additionalProperties": text()},
        "n": {"type": "integer"},
        "ios": {"x-kubernetes-int-or-string": True, "maxLength": 20},
        "objs": {"type": "array", "maxItems": 10, "items": {"type": "object", "properties": {
            "name": text(), "n": {"type": "integer"}}}},
    }}


def crd_with(rule: str) -> dict[str, Any]:
    spec = {**_spec_schema(), "x-kubernetes-validations": [{"rule": rule}]}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"}, "spec": {
                "group": "example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "kind": "Widget"},
                "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                    "openAPIV3Schema": {"type": "object", "properties": {"spec": spec}}}}]}}


def _printed(rule: str) -> str:
    return (f'apiextensions.ValidationRule{{Rule:"{rule}", Message:"", MessageExpression:"", '
            "Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:\"\", "
            "OptionalOldSelf:(*bool)(nil)}")


def _error(rule: str, column: int, message: str) -> str:
    return f"ERROR: <input>:1:{column}: {message}\n | {rule}\n | {'.' * (column - 1)}^"


def _overload(fn: str, args: str) -> str:
    return f"found no matching overload for '{fn}' applied to '{args}'"


REFUSED = [
    ("self.nope == 1", 5, "undefined field 'nope'"),
    ("has(self.nope)", 4, "undefined field 'nope'"),
    ("self.objs.all(o, o.nope == 1)", 19, "undefined field 'nope'"),
    ("self.n == 'a'", 8, _overload("_==_", "(int, string)")),
    ("self.n == 1.0", 8, _overload("_==_", "(int, double)")),
    ("self.n == 1u", 8, _overload("_==_", "(int, uint)")),
    ("self.s == null", 8, _overload("_==_", "(string, null)")),
    ("self.s + 1 == 'a'", 8, _overload("_+_", "(string, int)")),
    ("size(self.n) > 1", 5, _overload("size", "(int)")),
    ("self.l.all(x, x > 1)", 17, _overload("_>_", "(string, int)")),
    ("self.m.all(k, self.m[k] == 1)", 25, _overload("_==_", "(string, int)")),
    ("self.s.startsWith(1)", 18, _overload("startsWith", "string.(int)")),
    ("self.n.matches('a')", 15, _overload("matches", "int.(string)")),
    ("'a' in self.s", 5, _overload("@in", "(string, string)")),
    ("!self.s", 1, _overload("!_", "(string)")),
    ("self.n ? true : false", 8, _overload("_?_:_", "(int, bool, bool)")),
    ("self.l == ['a', 1]", 17, "expected type 'string' but found 'int'"),
    ("self.l.exists(x, x)", 18, "expected type 'bool' but found 'string'"),
    ("self.s.matches('[')", 16, "invalid matches argument"),
    ("self.n.all(x, true)", 5, "expression of type 'int' cannot be range of a comprehension "
                               "(must be list, map, or dynamic)"),
]


@pytest.mark.parametrize(("rule", "column", "message"), REFUSED, ids=[r[0] for r in REFUSED])
def test_a_rule_that_does_not_compile_is_refused_as_cel_go_words_it(
        rule: str, column: int, message: str) -> None:
    assert validate_crd(crd_with(rule), None) == [{
        "reason": "FieldValueInvalid", "field": WHERE,
        "message": f"Invalid value: {_printed(rule)}: compilation failed: "
                   f"{_error(rule, column, message)}"}]


def test_every_error_of_a_rule_is_reported_in_source_order() -> None:
    rule = "self.nope == 1 && self.n == 'a'"
    [cause] = validate_crd(crd_with(rule), None)
    assert cause["message"].endswith("compilation failed: " + _error(
        rule, 5, "undefined field 'nope'") + "\n" + _error(
        rule, 26, _overload("_==_", "(int, string)")))


@pytest.mark.parametrize("rule", ["self.s", "1", "self.l.map(x, x)"])
def test_a_rule_must_evaluate_to_a_bool(rule: str) -> None:
    [cause] = validate_crd(crd_with(rule), None)
    assert cause["field"] == WHERE
    assert cause["message"] == (f"Invalid value: {_printed(rule)}: cel expression must evaluate "
                                "to a bool")


ACCEPTED = [
    "self.n > 1.5", "self.m.k == 'v'", "self.ios == 1", "self.ios == null", "oldSelf == self",
    "int(self.s) == 1", "self.s in self.m", "self.s.size() == self.n",
    "self.objs.map(o, o.n).all(n, n > 0)", "self.l.exists_one(x, x.lowerAscii() == 'a')",
    "type(self.ios) == int ? self.ios > 0 : self.ios.matches('^[a-z]+$')",
]


@pytest.mark.parametrize("rule", ACCEPTED)
def test_rules_a_real_server_compiles_are_accepted(rule: str) -> None:
    assert validate_crd(crd_with(rule), None) == []


OUTSIDE = [  # real servers compile all of these; the embedded server does not evaluate them
    ("self.s.charAt(0) == 'a'", "method charAt/1"), ("self.l.sum() == 0", "method sum/0"),
    ("quantity(self.s).isInteger()", "function quantity/1"),
    ("self.s.split(',').size() > 1", "method split/1"), ("self.l.isSorted()", "method isSorted/0"),
]


@pytest.mark.parametrize(("rule", "why"), OUTSIDE, ids=[r[0] for r in OUTSIDE])
def test_a_rule_this_server_cannot_evaluate_is_refused_not_skipped(rule: str, why: str) -> None:
    [cause] = validate_crd(crd_with(rule), None)
    assert cause["field"] == WHERE
    assert cause["message"].endswith(
        f"compilation failed: the embedded API server cannot check this rule ({why})")


@pytest.mark.parametrize("rule", [r for r, _, _ in REFUSED if "matches('[')" not in r] + ACCEPTED)
def test_the_evaluator_runs_every_function_the_checker_accepts(rule: str) -> None:
    """The checker's table is the evaluator's: no accepted rule is skipped at run time."""
    obj = {"s": "a", "l": ["a"], "m": {"k": "v"}, "n": 1, "ios": 1,
           "objs": [{"name": "a", "n": 1}]}
    with contextlib.suppress(CelError):  # a run-time error is fine; Unsupported is not
        evaluate(rule, {"self": obj, "oldSelf": obj})


async def test_the_api_answers_422_and_serves_no_such_type(raw: Raw) -> None:
    code, body, _ = await raw.request("POST", CRDS, crd_with("self.nope == 1"))
    assert code == 422, body
    assert body["reason"] == "Invalid"
    assert [c["field"] for c in body["details"]["causes"]] == [WHERE]
    code, _, _ = await raw.request("GET", CRDS + "/widgets.example.com")
    assert code == 404
    code, body, _ = await raw.request("POST", CRDS, crd_with("self.n > 1"))
    assert code == 201, body


SAMPLES = {"string": "'a'", "int": "1", "double": "1.5", "bool": "true", "list": "['a']",
           "map": "{'a': 'b'}"}


def test_every_signature_the_checker_knows_is_one_the_evaluator_runs() -> None:
    calls = []
    for name, by_receiver in SIGNATURES.items():
        for receiver, overloads in by_receiver.items():
            for params in overloads:
                if not {receiver or "string", *params} <= SAMPLES.keys():
                    continue  # no literal of that type (bytes, durations, timestamps)
                args = ", ".join(SAMPLES[p] for p in params)
                calls.append(f"{SAMPLES[receiver]}.{name}({args})" if receiver
                             else f"{name}({args})")
    assert len(calls) > 20
    for call in calls:
        with contextlib.suppress(CelError):
            evaluate(call, {})
