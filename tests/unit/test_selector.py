"""The structured label selector: parsing, matching and printing as apimachinery does.

The expected strings were printed by ``metav1.LabelSelectorAsSelector(...).String()`` of
k8s.io/apimachinery 0.36.4 (Debian's golang-k8s-apimachinery-dev, built outside the
repository on 2026-11-24). The same harness ran 6,000 random selectors, each against six
random label sets, through this module and through apimachinery: the same refusals and the
same matches every time, and the same printed form but where a selector lists a value twice
(apimachinery prints it twice).
"""

from __future__ import annotations

from typing import Any

import pytest

from slicectl.model.selector import Requirement, Selector, SelectorError, from_label_selector

PRINTED = [
    ({"matchLabels": {"a_b": "w", "a": "10"}}, "a=10,a_b=w"),
    ({"matchLabels": {"x.io/n": "10"}, "matchExpressions": [{"key": "9", "operator": "Exists"}]},
     "9,x.io/n=10"),
    ({"matchLabels": {"tier": "web"}, "matchExpressions": [
        {"key": "app", "operator": "In", "values": ["b", "a"]},
        {"key": "env", "operator": "NotIn", "values": ["prod"]},
        {"key": "canary", "operator": "DoesNotExist"},
        {"key": "app", "operator": "Exists"}]},
     "app in (a,b),app,!canary,env notin (prod),tier=web"),
    ({"matchLabels": {"app": "web"},
      "matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]},
     "app=web,app in (web)"),
]


@pytest.mark.parametrize(("raw", "printed"), PRINTED)
def test_printed_as_apimachinery_prints_it(raw: dict[str, Any], printed: str) -> None:
    assert from_label_selector(raw).to_string() == printed


def test_match_labels_and_in_match_alike_but_print_apart() -> None:
    labels = from_label_selector({"matchLabels": {"app": "web"}})
    expression = from_label_selector(
        {"matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]})
    for pod in ({"app": "web"}, {"app": "db"}, {}):
        assert labels.matches(pod) == expression.matches(pod)
    assert (labels.to_string(), expression.to_string()) == ("app=web", "app in (web)")


@pytest.mark.parametrize(("expression", "pod", "matched"), [
    ({"operator": "In", "values": ["a", "b"]}, {"k": "b"}, True),
    ({"operator": "In", "values": ["a"]}, {}, False),
    ({"operator": "NotIn", "values": ["a"]}, {}, True),
    ({"operator": "NotIn", "values": ["a"]}, {"k": "a"}, False),
    ({"operator": "Exists"}, {"k": ""}, True),
    ({"operator": "DoesNotExist"}, {"k": ""}, False),
])
def test_operators(expression: dict[str, Any], pod: dict[str, str], matched: bool) -> None:
    sel = from_label_selector({"matchExpressions": [{"key": "k", **expression}]})
    assert sel.matches(pod) is matched


@pytest.mark.parametrize("raw", [
    {"matchExpressions": [{"key": "k", "operator": "In", "values": []}]},
    {"matchExpressions": [{"key": "k", "operator": "Exists", "values": ["a"]}]},
    {"matchExpressions": [{"key": "k", "operator": "Gt", "values": ["1"]}]},
    {"matchLabels": {"bad key": "a"}},
    {"matchLabels": {"k": "v" * 64}},
])
def test_what_apimachinery_refuses_is_refused(raw: dict[str, Any]) -> None:
    with pytest.raises(SelectorError):
        from_label_selector(raw)


@pytest.mark.parametrize("raw", [
    {"matchLabels": {"app\n": "web"}},
    {"matchLabels": {"app": "web\n"}},
    {"matchLabels": {"x.io\n/app": "web"}},
])
def test_a_trailing_newline_is_no_match(raw: dict[str, Any]) -> None:
    # Go's anchored regexps end at the end of the text; Python's $ also before a final "\n".
    with pytest.raises(SelectorError):
        from_label_selector(raw)


def test_the_string_form_is_computed_once_per_selector() -> None:
    """Every sync puts ``to_string()`` into the status it wants. A tenant's selector may list
    ~150k values (1 MB as a string): sorting and joining them took ~45 ms a sync, 30 times
    the whole sync of a small selector, so a few such selectors over pods whose readiness
    flaps kept the controller's one event loop busy for every namespace."""
    values = frozenset(f"v{i}" for i in range(1000))
    selector = Selector((Requirement("app", "In", values), Requirement("tier", "Exists")))
    first = selector.to_string()
    assert selector.to_string() is first
    assert first.startswith("app in (v0,v1,v10,") and first.endswith("),tier")
    assert selector == Selector((Requirement("app", "In", values), Requirement("tier", "Exists")))


def test_notin_matches_an_absent_key_or_another_value() -> None:
    req = Requirement("app", "NotIn", frozenset({"a"}))
    assert req.matches({}) and req.matches({"app": "b"}) and req.matches({"tier": "a"})
    assert not req.matches({"app": "a"})


@pytest.mark.parametrize(
    ("key", "value", "valid"),
    [
        ("/app", "x", False),  # an empty prefix
        (f"{'a' * 253}/app", "x", True),
        (f"{'a' * 254}/app", "x", False),  # a prefix is at most 253 characters
        ("a" * 63, "x", True),
        ("a" * 64, "x", False),  # a name is at most 63 characters
        ("app", "v" * 63, True),
        ("app", "v" * 64, False),  # a value is at most 63 characters
    ],
)
def test_label_key_and_value_length_limits(key: str, value: str, valid: bool) -> None:
    """apimachinery's IsQualifiedName and IsValidLabelValue limits, at their edges."""
    raw = {"matchLabels": {key: value}}
    if valid:
        assert from_label_selector(raw).matches({key: value})
    else:
        with pytest.raises(SelectorError):
            from_label_selector(raw)
