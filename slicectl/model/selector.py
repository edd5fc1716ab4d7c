"""Label selectors: one representation for both of their wire forms.

Kubernetes spells a label selector two ways: the structured ``metav1.LabelSelector``
(``matchLabels`` + ``matchExpressions``) inside objects, and the string form
(``a=b,c in (d,e),!f``) in a list/watch ``labelSelector`` query parameter. Both parse into the
same immutable :class:`Selector` (a conjunction of :class:`Requirement`), so the embedded API
server filtering a LIST and the controller matching a pod against an EndpointSelector agree by
construction.

Semantics follow ``k8s.io/apimachinery/pkg/labels``: ``In``/``=``/``==`` need the key present
with one of the values; ``NotIn``/``!=`` match when the key is absent or has another value;
``Exists``/``DoesNotExist`` test presence; ``Gt``/``Lt`` (string form only) compare integers.
Malformed input raises :class:`SelectorError` with a message fit for a 400 or a status condition.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

Operator = Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]
_OPERATORS: frozenset[str] = frozenset({"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"})

_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


class SelectorError(ValueError):
    """A label selector (or label) that Kubernetes would reject."""


def label_key_error(key: str) -> str | None:
    """Why ``key`` is not a valid label key (``[prefix/]name``), or None when it is."""
    prefix, _, name = key.rpartition("/")
    if "/" in key and not prefix:
        return f"invalid label key {key!r}: prefix part must be non-empty"
    if prefix and (len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)):
        return f"invalid label key {key!r}: prefix part must be a lowercase RFC 1123 subdomain"
    if not name or len(name) > 63 or not _QUALIFIED_NAME.match(name):
        return (
            f"invalid label key {key!r}: name part must consist of alphanumeric characters, "
            "'-', '_' or '.', must start and end with an alphanumeric character, "
            "and be at most 63 characters"
        )
    return None


def label_value_error(value: str) -> str | None:
    """Why ``value`` is not a valid label value, or None when it is."""
    if len(value) > 63 or not _LABEL_VALUE.match(value):
        return (
            f"invalid label value {value!r}: must be 63 characters or less and consist of "
            "alphanumeric characters, '-', '_' or '.', starting and ending with an alphanumeric"
        )
    return None


@dataclass(frozen=True, slots=True)
class Requirement:
    """One term of a selector: ``key <operator> values``."""

    key: str
    operator: Operator
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.operator
        if op == "In":
            return labels.get(self.key) in self.values
        if op == "NotIn":
            return labels.get(self.key) not in self.values
        if op == "Exists":
            return self.key in labels
        if op == "DoesNotExist":
            return self.key not in labels
        value = labels.get(self.key)
        if value is None:
            return False
        try:
            have = int(value)
        except ValueError:
            return False
        bound = int(next(iter(self.values)))
        return have > bound if op == "Gt" else have < bound

    def to_string(self) -> str:
        vals = ",".join(sorted(self.values))
        if self.operator == "In":
            return f"{self.key}={vals}" if len(self.values) == 1 else f"{self.key} in ({vals})"
        if self.operator == "NotIn":
            return f"{self.key}!={vals}" if len(self.values) == 1 else f"{self.key} notin ({vals})"
        if self.operator == "Exists":
            return self.key
        if self.operator == "DoesNotExist":
            return f"!{self.key}"
        return f"{self.key}{'>' if self.operator == 'Gt' else '<'}{vals}"


@dataclass(frozen=True, slots=True)
class Selector:
    """A conjunction of requirements. The empty selector matches everything."""

    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(r.matches(labels) for r in self.requirements)

    @property
    def empty(self) -> bool:
        return not self.requirements

    def equality_terms(self) -> tuple[tuple[str, frozenset[str]], ...]:
        """The ``In`` requirements as (key, values): the keys an inverted index can use.

        A pod matching the selector must carry one of ``values`` under ``key`` for each term,
        so indexing a selector under any single term never misses a match.
        """
        return tuple((r.key, r.values) for r in self.requirements if r.operator == "In")

    def to_string(self) -> str:
        return ",".join(r.to_string() for r in self.requirements)


def _check(key: str, values: frozenset[str]) -> None:
    if err := label_key_error(key):
        raise SelectorError(err)
    for v in values:
        if err := label_value_error(v):
            raise SelectorError(err)


def from_label_selector(raw: Any) -> Selector:
    """Parse a structured ``metav1.LabelSelector`` (a dict from JSON).

    Raises SelectorError on anything the API server would reject (unknown operator, values
    with Exists/DoesNotExist, no values with In/NotIn, invalid keys or values).
    """
    if raw is None:
        return Selector()
    if not isinstance(raw, Mapping):
        raise SelectorError("selector must be an object")
    reqs: list[Requirement] = []
    match_labels = raw.get("matchLabels") or {}
    if not isinstance(match_labels, Mapping):
        raise SelectorError("matchLabels must be an object of string values")
    for key, value in match_labels.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise SelectorError("matchLabels must map strings to strings")
        _check(key, frozenset({value}))
        reqs.append(Requirement(key, "In", frozenset({value})))
    exprs = raw.get("matchExpressions") or []
    if not isinstance(exprs, list):
        raise SelectorError("matchExpressions must be a list")
    for i, expr in enumerate(exprs):
        if not isinstance(expr, Mapping):
            raise SelectorError(f"matchExpressions[{i}] must be an object")
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        if not isinstance(key, str) or not key:
            raise SelectorError(f"matchExpressions[{i}].key is required")
        if op not in ("In", "NotIn", "Exists", "DoesNotExist"):
            raise SelectorError(
                f"matchExpressions[{i}].operator {op!r} is not one of In, NotIn, Exists, "
                "DoesNotExist"
            )
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise SelectorError(f"matchExpressions[{i}].values must be a list of strings")
        if op in ("In", "NotIn") and not values:
            raise SelectorError(f"matchExpressions[{i}]: values must be non-empty for {op}")
        if op in ("Exists", "DoesNotExist") and values:
            raise SelectorError(f"matchExpressions[{i}]: values must be empty for {op}")
        fv = frozenset(values)
        _check(key, fv)
        reqs.append(Requirement(key, op, fv))
    return Selector(tuple(reqs))


_TOKEN = re.compile(r"\s*(!=|==|=|!|\(|\)|,|[^\s!=(),<>]+|<|>)")


def parse_selector_string(text: str) -> Selector:
    """Parse the string form used by ``?labelSelector=``. Empty text selects everything."""
    tokens = _tokenize(text)
    reqs: list[Requirement] = []
    i = 0

    def expect_value_list() -> frozenset[str]:
        nonlocal i
        if i >= len(tokens) or tokens[i] != "(":
            raise SelectorError(f"expected '(' in label selector {text!r}")
        i += 1
        vals: list[str] = []
        while True:
            if i >= len(tokens):
                raise SelectorError(f"unterminated value list in label selector {text!r}")
            tok = tokens[i]
            if tok == ")":
                i += 1
                break
            if tok == ",":
                i += 1
                continue
            vals.append(tok)
            i += 1
        return frozenset(vals)

    while i < len(tokens):
        tok = tokens[i]
        if tok == "!":
            if i + 1 >= len(tokens):
                raise SelectorError(f"missing key after '!' in label selector {text!r}")
            key = tokens[i + 1]
            _check(key, frozenset())
            reqs.append(Requirement(key, "DoesNotExist"))
            i += 2
        else:
            key = tok
            _check(key, frozenset())
            i += 1
            nxt = tokens[i] if i < len(tokens) else ","
            if nxt == ",":
                reqs.append(Requirement(key, "Exists"))
            elif nxt in ("=", "==", "!="):
                value = tokens[i + 1] if i + 1 < len(tokens) and tokens[i + 1] != "," else ""
                i += 2 if value else 1
                _check(key, frozenset({value}))
                reqs.append(Requirement(key, "NotIn" if nxt == "!=" else "In", frozenset({value})))
            elif nxt in ("in", "notin"):
                i += 1
                values = expect_value_list()
                if not values:
                    raise SelectorError(f"empty value list for {key!r} in {text!r}")
                _check(key, values)
                reqs.append(Requirement(key, "In" if nxt == "in" else "NotIn", values))
            elif nxt in ("<", ">"):
                if i + 1 >= len(tokens):
                    raise SelectorError(f"missing number after {nxt!r} in {text!r}")
                bound = tokens[i + 1]
                try:
                    int(bound)
                except ValueError:
                    raise SelectorError(f"{bound!r} is not an integer in {text!r}") from None
                i += 2
                reqs.append(Requirement(key, "Gt" if nxt == ">" else "Lt", frozenset({bound})))
            else:
                raise SelectorError(f"unexpected {nxt!r} after {key!r} in label selector {text!r}")
        if i < len(tokens):
            if tokens[i] != ",":
                raise SelectorError(f"expected ',' in label selector {text!r}")
            i += 1
    return Selector(tuple(reqs))


def _tokenize(text: str) -> list[str]:
    tokens: list[str] = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise SelectorError(f"cannot parse label selector {text!r} at offset {pos}")
        tokens.append(m.group(1))
        pos = m.end()
    return tokens
