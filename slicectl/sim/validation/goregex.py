"""Go (RE2) regular expressions run with Python's ``re``, with Go's meaning of ``$``.

Why: a CRD's ``pattern`` and a CEL rule's ``matches()`` are Go regexps on a real server, where
``$`` (without the ``m`` flag) matches only at the very end of the text. Python's ``$`` also
matches before a final newline, so ``'^[a-z]+$'`` would accept ``"abc\\n"`` here and the
embedded server would be kinder than a real one. :func:`go_regex` rewrites each ``$`` outside a
character class to ``\\Z`` (and Go's ``\\z`` to ``\\Z``); a pattern that sets the ``m`` flag keeps
its ``$``. Patterns compile with ``re.ASCII``: RE2's ``\\d``, ``\\w``, ``\\s`` and ``\\b`` are ASCII
classes, Python's Unicode ones (an Arabic-Indic digit is a ``\\d`` there). Anything else
RE2 and ``re`` spell alike is passed through; a pattern ``re`` cannot compile raises
``re.error`` as before.
"""

from __future__ import annotations

import re
from functools import cache

__all__ = ["go_regex"]

_MULTILINE = re.compile(r"\(\?[a-zA-Z]*m")


@cache
def go_regex(pattern: str) -> re.Pattern[str]:
    if _MULTILINE.search(pattern):
        return re.compile(pattern, re.ASCII)
    out: list[str] = []
    i, in_class = 0, False
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            out.append(r"\Z" if pattern[i + 1] == "z" and not in_class else pattern[i:i + 2])
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
        elif ch == "$":
            out.append(r"\Z")
            i += 1
            continue
        out.append(ch)
        i += 1
    return re.compile("".join(out), re.ASCII)
