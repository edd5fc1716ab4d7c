"""What an informer does to its store with what the server sent: records in, differences out.

An informer decides when to list and watch; this decides how a list item or a watch event
changes the :class:`Store` and what the handler is told. Each object is parsed into a slim
record and stored, and its difference notified at once: a list item that is new or has a new
resourceVersion is an add or an update, an unchanged one keeps the record the indexes hold, and
at a list's end the keys it did not show (in the informer's namespace) are deleted, with a yield
to the event loop every 5 ms so that a relist of 150k pods never stalls the loop.

A malformed object (parse raises, or not a JSON object) is logged once per version and skipped:
the store keeps what it had for that key. Handlers are synchronous and must be cheap (the
per-event path is one parse, one dict operation and one handler call); one that raises is
logged and never stops the stream.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from slicectl.cache.handlers import InformerHandler, InformerStats, Versioned
from slicectl.cache.store import Store, object_key

_MALFORMED_MEMORY = 10_000
CHECK_EVERY = 16  # list items handled between two looks at the clock
_SLICE = 0.005  # seconds of list handling between two yields to the event loop

T = TypeVar("T", bound=Versioned)


@dataclass
class Resync:
    """One list in progress: the records it showed (by id) and how many it changed."""

    started: float  # time.monotonic() when the list was requested
    kept: set[int] = field(default_factory=set)
    changed: int = 0
    slice_start: float = field(default_factory=time.monotonic)

    async def pause(self) -> None:
        """Yield to the event loop once this slice of list handling has run 5 ms."""
        if time.monotonic() - self.slice_start > _SLICE:
            await asyncio.sleep(0)
            self.slice_start = time.monotonic()


class Mirror(Generic[T]):
    def __init__(
        self, store: Store[T], parse: Callable[[dict[str, Any]], T], key: Callable[[T], str],
        namespace: str | None, handler: InformerHandler[T] | None, stats: InformerStats,
        log: Any, delivered: Callable[[str], None],
    ) -> None:
        self._store = store
        self._parse = parse
        self._key = key
        self._namespace = namespace
        self._handler = handler
        self._stats = stats
        self._log = log
        self._delivered = delivered  # told the resourceVersion of each watch event applied
        self._malformed_seen: dict[str, str] = {}

    def list_item(self, resync: Resync, raw: Any) -> None:
        """One object of a list: stored and notified if new or changed, marked as listed."""
        store = self._store
        record = self._parse_or_skip(raw)
        if record is None:  # a malformed object keeps its record
            raw_key = object_key(raw) if isinstance(raw, dict) else None
            current = store.get(raw_key) if raw_key is not None else None
            if current is not None:
                resync.kept.add(id(current))
            return
        k = self._key(record)
        old = store.get(k)
        if old is not None and old.resource_version == record.resource_version:
            resync.kept.add(id(old))  # unchanged: indexes keep the record they hold
            return
        resync.kept.add(id(record))
        store.put(k, record)
        resync.changed += 1
        self._notify("ADDED" if old is None else "MODIFIED", old, record)

    async def drop_unlisted(self, resync: Resync) -> int:
        """Delete (and notify) what the list did not show; how many."""
        store, kept = self._store, resync.kept
        deleted = 0
        for i, stored in enumerate(store.values_in(self._namespace)):
            if i % (CHECK_EVERY * 64) == 0:
                await asyncio.sleep(0)
            if id(stored) in kept:
                continue
            k = self._key(stored)
            if store.get(k) is stored and (old_record := store.pop(k)) is not None:
                deleted += 1
                self._notify("DELETED", old_record, None)
        return deleted

    def apply(self, kind: str, obj: dict[str, Any], *, advance: bool = True) -> None:
        """A watch event, its resourceVersion first told to ``delivered``. While a streamed
        list is still arriving (``advance`` False) its resourceVersion is not one to resume
        from: only the list's end bookmark is."""
        record = self._parse_or_skip(obj)
        if record is None:
            meta = obj.get("metadata")
            if (advance and isinstance(meta, dict)
                    and isinstance(rv := meta.get("resourceVersion"), str)):
                self._delivered(rv)  # the event was delivered even if we cannot use it
            return
        if advance and record.resource_version:
            self._delivered(record.resource_version)
        k = self._key(record)
        if kind == "DELETED":
            old = self._store.pop(k)
            if old is not None:
                self._notify(kind, old, None)
        else:
            old = self._store.put(k, record)
            self._notify("ADDED" if old is None else "MODIFIED", old, record)

    def _notify(self, kind: str, old: T | None, new: T | None) -> None:
        handler = self._handler
        if handler is None:
            return
        try:
            if new is None:
                if old is not None:
                    handler.on_delete(old)
            elif old is None:
                handler.on_add(new)
            else:
                handler.on_update(old, new)
        except Exception:
            self._log.exception("informer_handler_failed", event_type=kind)

    def _parse_or_skip(self, raw: Any) -> T | None:
        if isinstance(raw, dict):
            try:
                return self._parse(raw)
            except Exception as exc:
                reason = str(exc) or type(exc).__name__
        else:
            reason = f"not an object: {type(raw).__name__}"
        self._stats.parse_errors += 1
        self._log_malformed(raw, reason)
        return None

    def _log_malformed(self, raw: Any, reason: str) -> None:
        raw_key = (object_key(raw) if isinstance(raw, dict) else None) or "?"
        meta = raw.get("metadata") if isinstance(raw, dict) else None
        version = str(meta.get("resourceVersion")) if isinstance(meta, dict) else ""
        if self._malformed_seen.get(raw_key) == version and raw_key != "?":
            return  # already logged this very version (a relist sees it again)
        if len(self._malformed_seen) >= _MALFORMED_MEMORY:
            self._malformed_seen.clear()
        self._malformed_seen[raw_key] = version
        self._log.warning("informer_object_skipped", key=raw_key, reason=reason[:300])
