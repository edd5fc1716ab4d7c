"""Go (RE2) regular expressions run with Python's ``re``, with Go's meaning of ``$``.

Why: a CRD's ``pattern`` and a CEL rule's ``matches()`` are Go regexps on a real server, where
``$`` (without the ``m`` flag) matches only at the very end of the text. Python's ``$`` also
matches before a final newline, so ``'^[a-z]+$'`` would accept ``"abc\\n"`` here and the
embedded server would be kinder than a real one. :func:`go_regex` rewrites each ``$`` outside a
character class to ``\\Z`` (and Go's ``\\z`` to ``\\Z``); a pattern that sets the ``m`` flag keeps
its ``$``. Patterns compile with ``re.ASCII``: RE2's ``\\d``, ``\\w``, ``\\s`` and ``\\b`` are ASCII
classes, Python's Unicode ones (an Arabic-Indic digit is a ``\\d`` there); and RE2's ``\\s`` has
no vertical tab, which Python's has, so it is spelled out. Anything else
RE2 and ``re`` spell alike is passed through; a pattern ``re`` cannot compile raises
``re.error`` as before.
"""

from __future__ import annotations

import re
from functools import cache

__all__ = ["go_regex"]

_MULTILINE = re.compile(r"\(\?[a-zA-Z]*m")


_RE2_SPACE = "\\t\\n\\f\\r "  # RE2's \\s; Python's ASCII \\s also has \\v


def _escape(pair: str, in_class: bool) -> str:
    """An escape as RE2 means it: ``\\z`` is ``\\Z``, ``\\s`` has no ``\\v`` (``\\S`` inside a
    class is left to Python, which is then harsher on a ``\\v``)."""
    if pair == r"\z" and not in_class:
        return r"\Z"
    if pair == r"\s":
        return _RE2_SPACE if in_class else f"[{_RE2_SPACE}]"
    if pair == r"\S" and not in_class:
        return f"[^{_RE2_SPACE}]"
    return pair


@cache
def go_regex(pattern: str) -> re.Pattern[str]:
    multiline = bool(_MULTILINE.search(pattern))
    out: list[str] = []
    i, in_class = 0, False
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            out.append(_escape(pattern[i:i + 2], in_class))
            i += 2
            continue
        if in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
            out.append(ch)
            i += 1
            for literal in ("^", "]"):  # "[^]...]" and "[]...]": that "]" is a member
                if pattern.startswith(literal, i):
                    out.append(literal)
                    i += 1
            continue
        elif ch == "$" and not multiline:
            out.append(r"\Z")
            i += 1
            continue
        out.append(ch)
        i += 1
    return re.compile("".join(out), re.ASCII)
