"""Informer: keep a :class:`Store` of slim records equal to the server's objects, and say what
changed.

Paginated LIST, then WATCH from the list's resourceVersion with bookmarks and a jittered server
``timeoutSeconds``. A LIST is streamed: each page is decoded into records and its differences
applied and notified before the next page is read, items decoded one at a time, yielding to the
event loop every 5 ms, so a relist of 150k pods never holds the whole list nor stalls the loop.
The first LIST asks for ``resourceVersion=0`` and relists for ``NotOlderThan`` the last synced
version, so the server may answer from its watch cache (client-go's reflector does the same);
if that version is refused (410), a consistent LIST follows.

A watch that ends normally, drops or stalls (no byte within the inactivity timeout) resumes
from the last resourceVersion seen, bookmarks included. A 410 Gone or any ``ERROR`` event
means the resourceVersion is no longer usable: the informer relists and emits exactly the
differences against its store (adds, updates for a changed resourceVersion, deletes for
vanished keys), never reusing the expired version. After each LIST an optional ``on_listed``
hook is told when that LIST was sent, so expectations about objects the store never saw (a
write acknowledged before the LIST) can be settled against it. Connection failures back off
(exponential, jittered, capped).

A malformed object (parse raises, or not a JSON object) is logged once and skipped: the store
keeps what it had for that key. Handlers are synchronous and must be cheap; the per-event path
is one parse, one dict operation and one handler call.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

import structlog

from slicectl.cache.store import Store, object_key
from slicectl.kube.client import KubeClient
from slicectl.kube.errors import ApiError, Gone, TooManyRequests, WatchStalled
from slicectl.kube.resources import Resource

_log = structlog.get_logger()
_MALFORMED_MEMORY = 10_000
_CHECK_EVERY = 16  # list items handled between two looks at the clock
_SLICE = 0.005  # seconds of list handling between two yields to the event loop


class Versioned(Protocol):
    @property
    def resource_version(self) -> str: ...


T = TypeVar("T", bound=Versioned)
T_contra = TypeVar("T_contra", contravariant=True)


class InformerHandler(Protocol[T_contra]):
    def on_add(self, new: T_contra) -> None: ...
    def on_update(self, old: T_contra, new: T_contra) -> None: ...
    def on_delete(self, old: T_contra) -> None: ...


class FanOut(Generic[T_contra]):
    """Several handlers behind one: each sees every event, in order; one failing is logged and
    does not keep the event from the others."""

    def __init__(self, *handlers: InformerHandler[T_contra]) -> None:
        self._handlers = handlers

    def on_add(self, new: T_contra) -> None:
        for h in self._handlers:
            _guarded(h.on_add, new)

    def on_update(self, old: T_contra, new: T_contra) -> None:
        for h in self._handlers:
            _guarded(h.on_update, old, new)

    def on_delete(self, old: T_contra) -> None:
        for h in self._handlers:
            _guarded(h.on_delete, old)


def _guarded(callback: Callable[..., None], *args: Any) -> None:
    try:
        callback(*args)
    except Exception:
        _log.exception("informer_handler_failed", handler=repr(callback))


@dataclass
class InformerStats:
    """Plain counters for obs/ to export; the informer only ever increments them."""

    events: dict[str, int] = field(default_factory=dict)  # by watch event type
    lists: int = 0  # every completed LIST, the first included
    relists: int = 0  # LISTs after the first (410, ERROR events, API errors)
    parse_errors: int = 0
    watches: int = 0  # watch requests started
    stalls: int = 0  # watches ended by the inactivity watchdog
    failures: int = 0  # connection or API errors that caused a backoff
    consecutive_failures: int = 0  # since the last successful list or watch; liveness reads it


class Informer(Generic[T]):
    def __init__(
        self,
        client: KubeClient,
        resource: Resource,
        parse: Callable[[dict[str, Any]], T],
        *,
        key: Callable[[T], str],
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        metadata_only: bool = False,
        page_size: int = 500,
        watch_timeout: int = 300,
        inactivity_timeout: float | None = None,
        handler: InformerHandler[T] | None = None,
        backoff_initial: float = 0.8,
        backoff_max: float = 30.0,
        on_listed: Callable[[float], None] | None = None,
        store: Store[T] | None = None,
    ) -> None:
        self._client = client
        self._resource = resource
        self._parse = parse
        self._key = key
        self._namespace = namespace
        self._label_selector = label_selector
        self._field_selector = field_selector
        self._metadata_only = metadata_only
        self._page_size = page_size
        self._watch_timeout = watch_timeout
        self._inactivity_timeout = inactivity_timeout
        self._handler = handler
        self._backoff_initial = backoff_initial
        self._backoff_max = backoff_max
        self._on_listed = on_listed  # called after each LIST with the time.monotonic() it began
        self._rv: str | None = None
        self._listed_rv: str | None = None  # the last version we synced to (never cleared)
        self._malformed_seen: dict[str, str] = {}
        # A shared store (several namespaced informers, one pod store) is fine: a relist only
        # deletes keys of its own namespace.
        self.store: Store[T] = store if store is not None else Store()
        self.synced = asyncio.Event()
        self.stats = InformerStats()
        self._log = _log.bind(resource=resource.plural, namespace=namespace or "")

    @property
    def resource_name(self) -> str:
        return self._resource.plural

    @property
    def resource_version(self) -> str | None:
        """The last resourceVersion seen (list, event or bookmark); None before the first list."""
        return self._rv

    async def run(self) -> None:
        """List and watch forever; cancel the task to stop."""
        failures = 0
        while True:
            delay: float | None = None
            try:
                if self._rv is None:
                    await self._relist()
                    self.synced.set()
                started = time.monotonic()
                got_events = await self._watch(self._rv)
                if got_events or time.monotonic() - started > 1.0:
                    failures = 0
                    self.stats.consecutive_failures = 0
                    continue
                delay = self._backoff(failures)  # ended at once, twice in a row: slow down
            except Gone:
                self._log.info("informer_expired", resource_version=self._rv)
                self._listed_rv = self._rv or self._listed_rv  # a lower bound for the relist
                self._rv = None  # never reuse an expired resourceVersion
                if failures:
                    delay = self._backoff(failures)
            except WatchStalled:
                self.stats.stalls += 1
                self._log.warning("informer_watch_stalled", resource_version=self._rv)
                continue
            except TooManyRequests as exc:  # not processed: retry the same request later
                delay = exc.retry_after or self._backoff(failures)
            except ApiError as exc:  # an ERROR event or a failed request: start from a list
                self._listed_rv = self._rv or self._listed_rv
                self._rv = None
                delay = exc.retry_after or self._backoff(failures)
                self._log.warning("informer_api_error", status=exc.status, error=str(exc))
            except Exception as exc:  # connection errors: resume the watch after a pause
                delay = self._backoff(failures)
                self._log.warning("informer_connection_error", error=repr(exc))
            failures += 1
            if delay:
                self.stats.failures += 1
                self.stats.consecutive_failures += 1
                await asyncio.sleep(delay)

    def _backoff(self, failures: int) -> float:
        ceiling = min(self._backoff_max, self._backoff_initial * (2.0 ** min(failures, 30)))
        return ceiling * random.uniform(0.5, 1.0)

    async def _relist(self) -> None:
        """LIST page by page and apply the differences as they come (see the module docstring).

        Adds and updates are applied and notified per page; an unchanged object (same
        resourceVersion) keeps its stored record, so indexes never hold a stale copy; keys
        this informer owns that the list did not show are deleted at the end.
        """
        rv_arg: str | None
        if not self.stats.lists:
            rv_arg, match = "0", None  # first list: any state, from the watch cache
        elif self._listed_rv:  # not older than what we have seen: the watch cache may answer
            rv_arg, match = self._listed_rv, "NotOlderThan"
        else:
            rv_arg, match = None, None
        try:
            await self._list_pages(rv_arg, match)
        except ApiError as exc:
            # 410: too old for the server; 504 "Too large resource version": the server's
            # history is behind ours (restored etcd). client-go then reads consistently.
            if match is None or not (isinstance(exc, Gone) or "Too large" in str(exc)):
                raise
            self._listed_rv = None
            await self._list_pages(None, None)

    async def _list_pages(self, rv_arg: str | None, match: str | None) -> None:
        started = time.monotonic()
        store = self.store
        # id() of the stored record of every key listed now (the old one when unchanged; a
        # malformed object keeps its record): ints, not key strings, to keep the peak low.
        kept: set[int] = set()
        changed = 0
        rv = ""
        slice_start = time.monotonic()
        pages = self._client.list_pages(
            self._resource, self._namespace, label_selector=self._label_selector,
            field_selector=self._field_selector, limit=self._page_size,
            metadata_only=self._metadata_only, resource_version=rv_arg,
            resource_version_match=match,
        )
        async with contextlib.aclosing(pages):
            async for page in pages:
                if page.restarted:
                    kept.clear()
                rv = page.resource_version
                for i, raw in enumerate(page.items):  # decoded one by one as we go
                    if i % _CHECK_EVERY == 0 and time.monotonic() - slice_start > _SLICE:
                        await asyncio.sleep(0)  # big pages must not stall the loop
                        slice_start = time.monotonic()
                    record = self._parse_or_skip(raw)
                    if record is None:
                        raw_key = object_key(raw) if isinstance(raw, dict) else None
                        current = store.get(raw_key) if raw_key is not None else None
                        if current is not None:
                            kept.add(id(current))
                        continue
                    k = self._key(record)
                    old = store.get(k)
                    if old is not None and old.resource_version == record.resource_version:
                        kept.add(id(old))
                        continue
                    kept.add(id(record))
                    store.put(k, record)
                    changed += 1
                    self._notify("ADDED" if old is None else "MODIFIED", old, record)
                del page
                await asyncio.sleep(0)
                slice_start = time.monotonic()
        deleted = 0
        for i, stored in enumerate(store.values_in(self._namespace)):
            if i % (_CHECK_EVERY * 64) == 0:
                await asyncio.sleep(0)
            if id(stored) in kept:
                continue
            k = self._key(stored)
            if store.get(k) is stored and (old_record := store.pop(k)) is not None:
                deleted += 1
                self._notify("DELETED", old_record, None)
        if self.stats.lists:
            self.stats.relists += 1
        self.stats.lists += 1
        self._rv = self._listed_rv = rv
        self._log.info(
            "informer_listed", items=len(kept), added_or_updated=changed, deleted=deleted,
            resource_version=rv,
        )
        if self._on_listed is not None:
            try:
                self._on_listed(started)
            except Exception:
                self._log.exception("informer_listed_hook_failed")

    async def _watch(self, rv: str | None) -> bool:
        """Watch from ``rv`` until the stream ends; True when any event arrived."""
        timeout = max(1, round(self._watch_timeout * random.uniform(0.9, 1.1)))
        inactivity = self._inactivity_timeout or timeout + 30.0
        self.stats.watches += 1
        events = self.stats.events
        got_events = False
        stream = self._client.watch(
            self._resource, self._namespace, resource_version=rv or "",
            label_selector=self._label_selector, field_selector=self._field_selector,
            timeout_seconds=timeout, allow_bookmarks=True, metadata_only=self._metadata_only,
            inactivity_timeout=inactivity,
        )
        async with contextlib.aclosing(stream):
            async for kind, obj in stream:
                got_events = True
                events[kind] = events.get(kind, 0) + 1
                if kind == "BOOKMARK":
                    meta = obj.get("metadata")
                    if isinstance(meta, dict) and (bookmark := meta.get("resourceVersion")):
                        self._rv = str(bookmark)
                    continue
                self._apply(kind, obj)
        return got_events

    def _apply(self, kind: str, obj: dict[str, Any]) -> None:
        record = self._parse_or_skip(obj)
        if record is None:
            meta = obj.get("metadata")
            if isinstance(meta, dict) and isinstance(rv := meta.get("resourceVersion"), str):
                self._rv = rv  # the event was delivered even if we cannot use it
            return
        if record.resource_version:
            self._rv = record.resource_version
        k = self._key(record)
        if kind == "DELETED":
            old = self.store.pop(k)
            if old is not None:
                self._notify(kind, old, None)
        else:
            old = self.store.put(k, record)
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
        self.stats.parse_errors += 1
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
