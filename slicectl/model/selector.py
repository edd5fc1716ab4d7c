"""Label selectors: the structured ``metav1.LabelSelector`` an EndpointSelector carries.

``matchLabels`` + ``matchExpressions`` parse into one immutable :class:`Selector` (a
conjunction of :class:`Requirement`), which the indexes and the reconciler match pods against.
(The string form of ``?labelSelector=`` is the embedded server's business, with its own code:
``slicectl.sim.selectors``.)

Semantics follow ``k8s.io/apimachinery`` (``metav1.LabelSelectorAsSelector``): ``In`` needs the
key present with one of the values; ``NotIn`` matches when the key is absent or has another
value; ``Exists``/``DoesNotExist`` test presence. Malformed input raises :class:`SelectorError`
with a message fit for a status condition. :meth:`Selector.to_string` prints what
apimachinery's ``Selector.String()`` prints for the same selector (requirements sorted by key,
``matchLabels`` as ``k=v``), the form ``status.selector`` shows.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Operator = Literal["In", "NotIn", "Exists", "DoesNotExist"]

_QUALIFIED_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")


class SelectorError(ValueError):
    """A label selector (or label) that Kubernetes would reject."""


def label_key_error(key: str) -> str | None:
    """Why ``key`` is not a valid label key (``[prefix/]name``), or None when it is."""
    prefix, _, name = key.rpartition("/")
    if "/" in key and not prefix:
        return f"invalid label key {key!r}: prefix part must be non-empty"
    if prefix and (len(prefix) > 253 or not _DNS_SUBDOMAIN.fullmatch(prefix)):
        return f"invalid label key {key!r}: prefix part must be a lowercase RFC 1123 subdomain"
    if not name or len(name) > 63 or not _QUALIFIED_NAME.fullmatch(name):
        return (
            f"invalid label key {key!r}: name part must consist of alphanumeric characters, "
            "'-', '_' or '.', must start and end with an alphanumeric character, "
            "and be at most 63 characters"
        )
    return None


def label_value_error(value: str) -> str | None:
    """Why ``value`` is not a valid label value, or None when it is."""
    if len(value) > 63 or not _LABEL_VALUE.fullmatch(value):
        return (
            f"invalid label value {value!r}: must be 63 characters or less and consist of "
            "alphanumeric characters, '-', '_' or '.', starting and ending with an alphanumeric"
        )
    return None


@dataclass(frozen=True, slots=True)
class Requirement:
    """One term of a selector: ``key <operator> values``. ``exact`` marks a ``matchLabels``
    entry (apimachinery's Equals), which matches as ``In`` its one value and prints as
    ``key=value``."""

    key: str
    operator: Operator
    values: frozenset[str] = frozenset()
    exact: bool = False

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.operator
        if op == "In":
            return labels.get(self.key) in self.values
        if op == "NotIn":
            return labels.get(self.key) not in self.values
        if op == "Exists":
            return self.key in labels
        return self.key not in labels

    def to_string(self) -> str:
        vals = ",".join(sorted(self.values))
        if self.exact:
            return f"{self.key}={vals}"
        if self.operator == "In":
            return f"{self.key} in ({vals})"
        if self.operator == "NotIn":
            return f"{self.key} notin ({vals})"
        if self.operator == "Exists":
            return self.key
        return f"!{self.key}"


@dataclass(frozen=True, slots=True)
class Selector:
    """A conjunction of requirements. The empty selector matches everything.

    ``to_string`` is computed once: every sync puts it in the status it wants, and a selector's
    values are unbounded (150k of them print as 1 MB, ~45 ms of sorting and joining)."""

    requirements: tuple[Requirement, ...] = ()
    _text: str | None = field(default=None, init=False, repr=False, compare=False)

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
        if self._text is None:
            text = ",".join(r.to_string() for r in sorted(self.requirements, key=lambda r: r.key))
            object.__setattr__(self, "_text", text)
            return text
        return self._text


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
        reqs.append(Requirement(key, "In", frozenset({value}), exact=True))
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
