"""Reading a watch stream: bytes into lines, one JSON line into one event (or an error, or
nothing).

Lines are cut from whatever each read brought, in one C split per read instead of a Python-level
scan per event; a line longer than :data:`MAX_LINE_BYTES` ends the stream with ``ValueError``,
and no read outlives the lines it was cut into (a read can be megabytes, and a quiet watch
waits for the next one for minutes). The API server streams one ``{"type": ..., "object": ...}``
document per line. A line that is not
JSON, not an object, or has an unknown type is reported through a callback and skipped: one bad
object must not end a stream that carries thousands of good ones. An ``ERROR`` event carries a
``Status``; it becomes the same typed error an HTTP response with that code would (410 ->
:class:`~slicectl.kube.errors.Gone`).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from typing import Any, NamedTuple

import aiohttp
import orjson
import structlog

from slicectl.kube.errors import ApiError, WatchStalled, error_for, redacted
from slicectl.kube.lean import without_managed_fields

EVENT_TYPES = frozenset({"ADDED", "MODIFIED", "DELETED", "BOOKMARK"})

# Large enough for the biggest object etcd stores (1.5 MiB) plus its JSON envelope.
MAX_LINE_BYTES = 8 * 1024 * 1024

MalformedHook = Callable[[bytes, str], None]  # (the line, truncated; why it was skipped)

_log = structlog.get_logger()


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


class LineDecoder:
    """One client's watch lines into events: managedFields cut when safe (decoded in full if
    the cut fails), malformed lines counted and logged, the credential redacted from what is
    logged or raised."""

    def __init__(self, redact: Callable[[str], str]) -> None:
        self._redact = redact
        self.malformed = 0  # lines skipped as malformed

    def decode(self, line: bytes) -> WatchEvent | None:
        """One line's event; None for a blank or malformed line. Raises ApiError for
        ``ERROR``."""
        lean = without_managed_fields(line)
        try:
            event = decode_event(lean, self._skipped if lean is line else _quiet)
            if event is None and lean is not line:
                event = decode_event(line, self._skipped)
        except ApiError as exc:
            raise redacted(exc, self._redact) from None
        return event

    def _skipped(self, line: bytes, why: str) -> None:
        self.malformed += 1
        text = self._redact(line.decode("utf-8", "replace"))
        _log.warning("watch_line_skipped", reason=self._redact(why), line=text)


def _quiet(line: bytes, why: str) -> None:
    """A malformed-line hook for a first attempt that is retried in full."""


async def read_lines(content: aiohttp.StreamReader, path: str,
                     inactivity_timeout: float | None) -> AsyncGenerator[list[bytes], None]:
    """The complete lines of each read, until the stream ends (its last line, even if cut
    short, comes last). Raises WatchStalled when a read times out."""
    partial: list[bytes] = []  # the start of a line that has not ended yet
    partial_size = 0
    while True:
        try:
            chunk = await content.readany()
        except TimeoutError as exc:
            raise WatchStalled(f"watch {path} idle for {inactivity_timeout}s") from exc
        if not chunk:  # the end; a line cut short is decoded (and reported) as it is
            if partial:
                yield [b"".join(partial)]
            return
        lines = chunk.split(b"\n")
        if len(lines) == 1:  # no line ends in this read
            partial.append(chunk)
            partial_size += len(chunk)
            if partial_size > MAX_LINE_BYTES:
                raise ValueError(f"watch {path}: a line longer than {MAX_LINE_BYTES}")
            continue
        del chunk
        if partial:  # only the first line is joined: the rest of the read is copied once
            partial.append(lines[0])
            lines[0] = b"".join(partial)
        rest = lines.pop()
        partial, partial_size = ([rest], len(rest)) if rest else ([], 0)
        yield lines
        del lines
