"""Request JSON as Go's decoder reads it.

Why: a real server decodes bodies with encoding/json (through sigs.k8s.io/json), which takes
invalid UTF-8 in a string and a lone UTF-16 surrogate escape (``"\\ud800"``) as U+FFFD instead
of refusing them, and refuses what is no JSON (``NaN``, ``Infinity``). orjson refuses the first
two; Python's json accepts all of them and keeps a lone surrogate, which no later step can
encode. :func:`loads` gives Go's answer for each.

An object that names a key twice is valid JSON to every decoder, but not one value to all of
them: orjson keeps the last, Go's typed decoder decodes the second into what the first built,
and the strict decoder reports it. :func:`repeated` finds such a body and gives it as a tree
that keeps every member (:class:`Pairs`), for :mod:`slicectl.sim.validation.duplicates`.

Where a caller answers with the decoder's own message, :func:`syntax_error` words Python's
complaint about a document that is no JSON as encoding/json's scanner does.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

_SURROGATE = re.compile("[\ud800-\udfff]")
_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")


class Pairs(list[tuple[str, Any]]):
    """One JSON object's members in document order, a repeated key kept each time."""


class Number(str):
    """A JSON number as its literal (Go's type errors quote it): see :func:`literal_tree`."""


def _refuse(constant: str) -> Any:
    raise ValueError(f"invalid character {constant[0]!r} looking for beginning of value")


def _fix(text: str) -> str:
    return _SURROGATE.sub("\ufffd", text) if _SURROGATE.search(text) else text


def _replace_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return _fix(value)
    if isinstance(value, list):
        return [_replace_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {_fix(k): _replace_surrogates(v) for k, v in value.items()}
    return value


def loads(raw: bytes) -> Any:
    """``raw`` decoded; raises orjson's error when Go's decoder would refuse it too."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as first:
        try:
            value = json.loads(raw.decode("utf-8", "replace"), parse_constant=_refuse)
        except ValueError:
            raise first from None
        return _replace_surrogates(value)


def literal_tree(text: str) -> Any:
    """``text`` as a tree of :class:`Pairs`, lists, strings, bools, None and :class:`Number`
    literals, for a caller that decodes into Go types itself; raises ValueError (worded by
    :func:`syntax_error`) when Go's decoder refuses the document too."""
    tree = json.loads(text, object_pairs_hook=Pairs, parse_int=Number, parse_float=Number,
                      parse_constant=_refuse)
    return _fix_tree(tree) if _ESCAPED_SURROGATE.search(text) else tree


class _Repeated(Exception):
    pass


def _distinct(items: list[tuple[str, Any]]) -> dict[str, Any]:
    members = dict(items)
    if len(members) != len(items):
        raise _Repeated
    return members


def repeated(raw: bytes) -> Any | None:
    """``raw`` as a tree whose objects are :class:`Pairs` when one of its objects names a key
    twice (as Go compares keys: after unescaping, a lone surrogate read as U+FFFD); None when
    none does, or when ``raw`` is no JSON (:func:`loads` says why)."""
    text = raw.decode("utf-8", "replace")
    lone = _ESCAPED_SURROGATE.search(text) is not None
    try:
        json.loads(text, parse_constant=_refuse, object_pairs_hook=_distinct)
        if not lone:
            return None
        tree = json.loads(text, parse_constant=_refuse, object_pairs_hook=Pairs)
    except _Repeated:
        tree = json.loads(text, parse_constant=_refuse, object_pairs_hook=Pairs)
    except ValueError:
        return None
    tree = _fix_tree(tree) if lone else tree
    return tree if _has_repeats(tree) else None


def _has_repeats(tree: Any) -> bool:
    if isinstance(tree, Pairs):
        return len({k for k, _ in tree}) != len(tree) or any(_has_repeats(v) for _, v in tree)
    if isinstance(tree, list):
        return any(_has_repeats(v) for v in tree)
    return False


def _fix_tree(value: Any) -> Any:
    if isinstance(value, Pairs):
        return Pairs((_fix(k), _fix_tree(v)) for k, v in value)
    if isinstance(value, list):
        return [_fix_tree(v) for v in value]
    return _fix(value) if isinstance(value, str) else value


def plain(tree: Any) -> Any:
    """A :func:`repeated` tree as orjson decodes it: each object's last value of a key, at the
    place of its first."""
    if isinstance(tree, Pairs):
        return {k: plain(v) for k, v in tree}
    if isinstance(tree, list):
        return [plain(v) for v in tree]
    return tree


_EXPECTING = {
    "Expecting value": "looking for beginning of value",
    "Expecting property name enclosed in double quotes": "looking for beginning of object key "
                                                         "string",
    "Expecting ':' delimiter": "after object key",
    "Extra data": "after top-level value",
    "Invalid control character at": "in string literal",
    "Invalid \\escape": "in string escape code",
}


def syntax_error(text: str, exc: ValueError) -> str:
    """encoding/json's message for ``text``, which Python's json refused with ``exc``:
    ``unexpected end of JSON input`` when the document stops early, else ``invalid character
    'c' <where>``."""
    if not isinstance(exc, json.JSONDecodeError):
        return str(exc)  # _refuse's, already Go's
    pos = exc.pos
    if exc.msg.startswith("Unterminated string") or not text[pos:].strip():
        return "unexpected end of JSON input"
    while text[pos] in " \t\r\n" and not exc.msg.startswith("Invalid"):
        pos += 1  # Python points before the blanks the scanner skips
    where = _EXPECTING.get(exc.msg)
    if where is None:  # "Expecting ',' delimiter": after an object's member or an array's item
        where = ("after object key:value pair" if _innermost(text[:pos]) == "{"
                 else "after array element")
    return f"invalid character {_quote_char(text[pos])} {where}"


def _quote_char(char: str) -> str:
    """encoding/json's ``quoteChar``."""
    if char == "'":
        return "'\\''"
    if char == '"':
        return "'\"'"
    escapes = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}
    if char in escapes:
        return f"'{escapes[char]}'"
    return f"'{char}'" if char.isprintable() else f"'\\x{ord(char):02x}'"


def _innermost(text: str) -> str:
    """The innermost container open at the end of ``text`` (JSON up to an error): ``{``, ``[``
    or ""."""
    stack: list[str] = []
    in_string = escaped = False
    for char in text:
        if escaped:
            escaped = False
        elif in_string:
            escaped = char == "\\"
            in_string = char != '"'
        elif char == '"':
            in_string = True
        elif char in "{[":
            stack.append(char)
        elif char in "}]" and stack:
            stack.pop()
    return stack[-1] if stack else ""
