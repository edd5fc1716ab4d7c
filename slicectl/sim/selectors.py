"""Label selectors as kube-apiserver parses and evaluates the ``labelSelector`` query parameter.

Why its own code: the controller has its own selector (:mod:`slicectl.model.selector`); if the
embedded server used it too, a bug there would be invisible (both sides would agree by
construction). This module is written from ``k8s.io/apimachinery/pkg/labels/selector.go``
alone: the same lexer (identifiers end at whitespace or one of ``=!(),<>``; ``in``/``notin``
are keywords except where a value is expected), the same recursive-descent parser, the same
``NewRequirement`` checks (``validation.IsQualifiedName`` on keys, ``IsValidLabelValue`` on
values, integers for ``gt``/``lt``), and the same error texts, which the real server returns
verbatim as a 400 BadRequest message (e.g. ``unable to parse requirement: <nil>: Invalid
value: "a$": name part must consist of ...``, ``found ',', expected: identifier after ','``).

Field selectors live in :mod:`slicectl.sim.fieldsets`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from slicectl.sim.validation.names import label_value_errors, qualified_name_errors

_SPECIAL = frozenset("=!(),><")
_WHITESPACE = frozenset(" \t\r\n")
_TOKENS = {")": "CLOSE", ",": "COMMA", "!": "NOT", "==": "DOUBLE_EQUALS", "=": "EQUALS",
           ">": "GT", "in": "IN", "<": "LT", "!=": "NOT_EQUALS", "notin": "NOTIN", "(": "OPEN"}
_BINARY = "in, notin, =, ==, !=, gt, lt"  # binaryOperators joined as the parser reports them
_INT64 = re.compile(r"[+-]?[0-9]+")


class LabelSelectorError(ValueError):
    """A ``labelSelector`` the real server refuses; ``str()`` is its exact message."""


def _parse_int64(text: str) -> int | None:
    """Go's ``strconv.ParseInt(text, 10, 64)``: no spaces, no underscores, int64 range."""
    if not _INT64.fullmatch(text):
        return None
    value = int(text)
    return value if -(2**63) <= value < 2**63 else None


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    operator: str  # in, notin, =, ==, !=, gt, lt, exists, !
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.operator
        if op in ("in", "=", "=="):
            return self.key in labels and labels[self.key] in self.values
        if op in ("notin", "!="):
            return self.key not in labels or labels[self.key] not in self.values
        if op == "exists":
            return self.key in labels
        if op == "!":
            return self.key not in labels
        if self.key not in labels:
            return False
        have = _parse_int64(labels[self.key])
        want = _parse_int64(self.values[0]) if len(self.values) == 1 else None
        if have is None or want is None:
            return False
        return have > want if op == "gt" else have < want


@dataclass(frozen=True, slots=True)
class LabelSelector:
    requirements: tuple[Requirement, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.requirements

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(r.matches(labels) for r in self.requirements)


def _lex(text: str) -> list[tuple[str, str]]:
    items: list[tuple[str, str]] = []
    pos, end = 0, len(text)
    while True:
        while pos < end and text[pos] in _WHITESPACE:
            pos += 1
        if pos >= end:
            items.append(("END", ""))
            return items
        if text[pos] in _SPECIAL:
            buf, last = "", None
            while pos < end and text[pos] in _SPECIAL:
                candidate = buf + text[pos]
                if candidate in _TOKENS:
                    buf, last = candidate, (_TOKENS[candidate], candidate)
                    pos += 1
                elif last is not None:
                    break
                else:
                    buf = candidate
                    pos += 1
            items.append(last or ("ERROR", f"error expected: keyword found '{buf}'"))
            continue
        start = pos
        while pos < end and text[pos] not in _SPECIAL and text[pos] not in _WHITESPACE:
            pos += 1
        word = text[start:pos]
        items.append((_TOKENS.get(word, "ID"), word))


class _Parser:
    def __init__(self, text: str) -> None:
        self.items = _lex(text)
        self.pos = 0

    def lookahead(self, values: bool) -> tuple[str, str]:
        tok, lit = self.items[self.pos]
        return ("ID", lit) if values and tok in ("IN", "NOTIN") else (tok, lit)

    def consume(self, values: bool) -> tuple[str, str]:
        item = self.lookahead(values)
        self.pos += 1
        return item

    def parse(self) -> list[Requirement]:
        found: list[Requirement] = []
        while True:
            tok, lit = self.lookahead(True)
            if tok == "END":
                return found
            if tok not in ("ID", "NOT"):
                raise LabelSelectorError(
                    f"found '{lit}', expected: !, identifier, or 'end of string'")
            try:
                found.append(self.requirement())
            except LabelSelectorError as exc:
                raise LabelSelectorError(f"unable to parse requirement: {exc}") from exc
            tok, lit = self.consume(True)
            if tok == "END":
                return found
            if tok != "COMMA":
                raise LabelSelectorError(f"found '{lit}', expected: ',' or 'end of string'")
            tok2, lit2 = self.lookahead(True)
            if tok2 not in ("ID", "NOT"):
                raise LabelSelectorError(f"found '{lit2}', expected: identifier after ','")

    def requirement(self) -> Requirement:
        operator = ""
        tok, key = self.consume(True)
        if tok == "NOT":
            operator = "!"
            tok, key = self.consume(True)
        if tok != "ID":
            raise LabelSelectorError(f"found '{key}', expected: identifier")
        key_errors = qualified_name_errors(key)
        if key_errors:
            raise LabelSelectorError(f'<nil>: Invalid value: "{key}": {"; ".join(key_errors)}')
        if operator == "!" or self.lookahead(True)[0] in ("END", "COMMA"):
            return new_requirement(key, operator or "exists", [])
        tok, lit = self.consume(False)
        op = {"IN": "in", "NOTIN": "notin", "EQUALS": "=", "DOUBLE_EQUALS": "==",
              "NOT_EQUALS": "!=", "GT": "gt", "LT": "lt"}.get(tok)
        if op is None:
            raise LabelSelectorError(f"found '{lit}', expected: {_BINARY}")
        values = self.set_values() if op in ("in", "notin") else self.exact_value()
        return new_requirement(key, op, sorted(values))

    def set_values(self) -> set[str]:
        tok, lit = self.consume(True)
        if tok != "OPEN":
            raise LabelSelectorError(f"found '{lit}' expected: '('")
        tok, lit = self.lookahead(True)
        if tok == "CLOSE":
            self.consume(True)
            return {""}
        if tok not in ("ID", "COMMA"):
            raise LabelSelectorError(f"found '{lit}', expected: ',', ')' or identifier")
        values = self.identifiers()
        if self.consume(True)[0] != "CLOSE":
            raise LabelSelectorError(f"found '{lit}', expected: ')'")
        return values

    def identifiers(self) -> set[str]:
        found: set[str] = set()
        while True:
            tok, lit = self.consume(True)
            if tok == "ID":
                found.add(lit)
                tok2, lit2 = self.lookahead(True)
                if tok2 == "COMMA":
                    continue
                if tok2 == "CLOSE":
                    return found
                raise LabelSelectorError(f"found '{lit2}', expected: ',' or ')'")
            if tok != "COMMA":
                raise LabelSelectorError(f"found '{lit}', expected: ',', or identifier")
            if not found:
                found.add("")
            tok2 = self.lookahead(True)[0]
            if tok2 == "CLOSE":
                found.add("")
                return found
            if tok2 == "COMMA":
                self.consume(True)
                found.add("")

    def exact_value(self) -> set[str]:
        if self.lookahead(True)[0] in ("END", "COMMA"):
            return {""}
        tok, lit = self.consume(True)
        if tok == "ID":
            return {lit}
        raise LabelSelectorError(f"found '{lit}', expected: identifier")


def _aggregate(messages: list[str]) -> str:
    unique = list(dict.fromkeys(messages))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


def new_requirement(key: str, operator: str, values: list[str]) -> Requirement:
    """``NewRequirement``: refuse what it refuses, with its field paths (``values[0][key]``)."""
    errs: list[str] = []
    if operator in ("gt", "lt"):
        errs.extend(f'values[{i}]: Invalid value: "{v}": for \'Gt\', \'Lt\' operators, the '
                    "value must be an integer"
                    for i, v in enumerate(values) if _parse_int64(v) is None)
    for i, value in enumerate(values):
        value_errors = label_value_errors(value)
        if value_errors:
            errs.append(f'values[{i}][{key}]: Invalid value: "{value}": '
                        + "; ".join(value_errors))
    if errs:
        raise LabelSelectorError(_aggregate(errs))
    return Requirement(key, operator, tuple(values))


def parse_label_selector(text: str) -> LabelSelector:
    """``labels.Parse``: requirements sorted by key; raises :class:`LabelSelectorError`."""
    requirements = _Parser(text).parse()
    requirements.sort(key=lambda r: r.key)
    return LabelSelector(tuple(requirements))
