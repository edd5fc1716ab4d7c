"""Request JSON as Go's decoder reads it.

Why: a real server decodes bodies with encoding/json (through sigs.k8s.io/json), which takes
invalid UTF-8 in a string and a lone UTF-16 surrogate escape (``"\\ud800"``) as U+FFFD instead
of refusing them, and refuses what is no JSON (``NaN``, ``Infinity``). orjson refuses the first
two; Python's json accepts all of them and keeps a lone surrogate, which no later step can
encode. :func:`loads` gives Go's answer for each.
"""

from __future__ import annotations

import json
from typing import Any

import orjson


def _refuse(constant: str) -> Any:
    raise ValueError(f"invalid character {constant[0]!r} looking for beginning of value")


def _replace_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        if any(0xD800 <= ord(c) <= 0xDFFF for c in value):
            return "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in value)
        return value
    if isinstance(value, list):
        return [_replace_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {_replace_surrogates(k): _replace_surrogates(v) for k, v in value.items()}
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
