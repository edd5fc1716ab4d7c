"""Decoding a watch stream: one JSON line in, one event out (or an error, or nothing).

The API server streams one ``{"type": ..., "object": ...}`` document per line. A line that is not
JSON, not an object, or has an unknown type is reported through a callback and skipped: one bad
object must not end a stream that carries thousands of good ones. An ``ERROR`` event carries a
``Status``; it becomes the same typed error an HTTP response with that code would (410 ->
:class:`~slicectl.kube.errors.Gone`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import orjson

from slicectl.kube.errors import error_for

EVENT_TYPES = frozenset({"ADDED", "MODIFIED", "DELETED", "BOOKMARK"})

# Large enough for the biggest object etcd stores (1.5 MiB) plus its JSON envelope.
MAX_LINE_BYTES = 8 * 1024 * 1024

MalformedHook = Callable[[bytes, str], None]  # (the line, truncated; why it was skipped)


class WatchEvent(NamedTuple):
    type: str  # ADDED | MODIFIED | DELETED | BOOKMARK
    object: dict[str, Any]


def decode_event(line: bytes, on_malformed: MalformedHook) -> WatchEvent | None:
    """Decode one line; None for a blank or malformed line. Raises ApiError for ``ERROR``."""
    try:
        doc = orjson.loads(line)
    except orjson.JSONDecodeError:
        if line.strip():
            on_malformed(line[:200], "invalid JSON")
        return None
    if not isinstance(doc, dict):
        on_malformed(line[:200], "not a JSON object")
        return None
    kind = doc.get("type")
    obj = doc.get("object")
    if kind == "ERROR":
        status = obj if isinstance(obj, dict) else {}
        code = status.get("code")
        raise error_for(code if isinstance(code, int) else 500, status, None, "watch error")
    if kind not in EVENT_TYPES or not isinstance(obj, dict):
        on_malformed(line[:200], f"unexpected event type {kind!r} or object")
        return None
    return WatchEvent(kind, obj)
