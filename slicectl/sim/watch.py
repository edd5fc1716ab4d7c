"""WATCH: one chunked stream of JSON lines per watcher, fed by the store's event fan-out.

Decides what a watcher sees and when: the starting point (synthetic ADDED events for the
current state when resourceVersion is unset or "0" or sendInitialEvents=true, the latter ending
in a BOOKMARK annotated ``k8s.io/initial-events-end``, or an ERROR once its resourceVersion is
ahead of the store; otherwise every event strictly after the given resourceVersion, or one
ERROR event carrying a 410 Expired Status when history no longer reaches back there), filter
transitions as the watch cache converts them (an object that stops matching is DELETED for this
watcher, carrying its last state that matched at the event's resourceVersion; one that starts
matching is ADDED),
BOOKMARK events as the cacher sends them (about once a ``bookmark_interval``, 60 s by default,
and once 2 s before the watch's deadline; each carries the resource's last event's
resourceVersion and is sent only when that is newer than the version the watch started from:
a watch on a resource nothing writes hears nothing at all until its deadline),
timeoutSeconds (whole seconds; 0 or none is the server's own, a random 1x to 2x
``--min-request-timeout``; the stream then ends cleanly), the bounded buffer of a watcher
(:mod:`slicectl.sim.backpressure`: a watcher that falls further behind than its buffer for
longer than the dispatch budget is closed, as the cacher closes unresponsive watchers), and the
faults that drop (end cleanly) or stall (send nothing, not even bookmarks nor its end at the
deadline, as a half-open connection) a stream. A stream whose client closed its connection
ends within ``GONE_CHECK``, as a real server's does at once.
Event bytes come from :meth:`Event.line`, shared by all watchers (the object or, for
metadata-only watches, its PartialObjectMetadata); only Table watches render per watcher.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import random
import time
from collections.abc import Callable
from typing import Any

import orjson
from aiohttp import web

from slicectl.sim import errors
from slicectl.sim.backpressure import TimeBudget, channel_size
from slicectl.sim.listing import Filter, resource_version
from slicectl.sim.negotiation import partial
from slicectl.sim.options import query_bool, query_int64
from slicectl.sim.resources import storage_key
from slicectl.sim.storage import Event, Obj, Store
from slicectl.sim.types import ResourceType

INITIAL_EVENTS_END = "k8s.io/initial-events-end"
LIST_BLUEPRINT = "kubernetes.io/initial-events-list-blueprint"
MIN_REQUEST_TIMEOUT = 1800.0  # kube-apiserver's --min-request-timeout default, in seconds
GONE_CHECK = 0.5  # seconds between two looks at whether a watch's client went away
Render = Callable[[Obj], dict[str, Any]]


class Watcher:
    """One open watch: filters offered events into a byte buffer its stream task drains."""

    def __init__(self, rt: ResourceType, flt: Filter, render: Render | None,
                 meta_only: bool = False, capacity: int = 0,
                 budget: TimeBudget | None = None, store: Store | None = None) -> None:
        self.rt = rt
        self.flt = flt
        self.render = render
        self.meta_only = meta_only
        self.buffer: list[bytes] = []
        self.wake = asyncio.Event()
        self.closed = False
        self.ending = False  # the resource is gone: end the stream once the buffer is sent
        self.stalled_until = 0.0
        self.capacity = capacity  # live events it may lag behind by (0: unbounded)
        self.budget = budget or TimeBudget()
        self.store = store
        self.pending = 0  # live events queued since the stream last took the buffer
        self.takes = 0  # how many times the stream took the buffer
        self.taken_at = 0.0
        self.blocked = False
        self.terminated = False  # closed by the server for falling behind
        self.unsent_from = 0  # resourceVersion of the oldest event queued but not yet taken
        self.since = 0  # the version the watch started from: bookmarks only for newer ones

    def holds(self, rv: int) -> bool:
        """It holds an event at or before ``rv`` that its stream can send now: not closed,
        stalled or full."""
        return (0 < self.unsent_from <= rv and not self.closed and not self.blocked
                and self.stalled_until <= time.monotonic())

    def take(self) -> bytes:
        """Everything queued, for the stream to write; the watcher is keeping up again."""
        data = b"".join(self.buffer)
        self.buffer.clear()
        self.pending = 0
        self.unsent_from = 0
        self.takes += 1
        self.taken_at = time.monotonic()
        return data

    def _block(self) -> None:
        """Full: wait at most the dispatch budget for the stream to take the buffer."""
        self.blocked = True
        timeout = self.budget.take()
        asyncio.get_running_loop().call_later(
            timeout, self._unblocked_or_close, self.takes, time.monotonic(), timeout)

    def _unblocked_or_close(self, takes: int, since: float, timeout: float) -> None:
        self.blocked = False
        if self.closed:
            return
        if self.takes == takes:
            self.terminate()
            return
        self.budget.give_back(timeout - (self.taken_at - since))
        if self.capacity and self.pending > self.capacity:
            self._block()

    def terminate(self) -> None:
        """Close as the cacher does an unresponsive watcher: queued events are dropped."""
        self.terminated = True
        self.buffer.clear()
        if self.store is not None:
            self.store.bucket(self.rt).watchers.discard(self)
            self.store.terminated_watchers[storage_key(self.rt)] += 1
        self.close()

    def line(self, event: Event, etype: str, left: bool = False) -> bytes:
        """``left``: the DELETED of an object that stopped matching (:meth:`Event.left`)."""
        if self.render is None:
            return event.line(etype, self.meta_only, left)
        obj = event.left() if left else event.obj
        return orjson.dumps({"type": etype, "object": self.render(obj)}) + b"\n"

    def offer(self, event: Event) -> None:
        matches = self.flt.matches
        now = matches(event.obj)
        left = False
        if event.type == "MODIFIED" and event.prev is not None:
            before = matches(event.prev)
            if now and before:
                etype = "MODIFIED"
            elif now:
                etype = "ADDED"
            elif before:
                etype, left = "DELETED", True
            else:
                return
        elif event.type == "DELETED":
            if event.prev is None or not matches(event.prev):
                return
            etype = "DELETED"
        elif now:
            etype = event.type
        else:
            return
        self.buffer.append(self.line(event, etype, left))
        self.unsent_from = self.unsent_from or event.rv
        self.pending += 1
        self.wake.set()
        if self.capacity and self.pending > self.capacity and not self.blocked:
            self._block()

    def send_raw(self, line: bytes) -> None:
        self.buffer.append(line)
        self.wake.set()

    def close(self) -> None:
        self.closed = True
        self.wake.set()

    def end(self) -> None:
        """End the stream after what is queued, as the cacher's watchers end when the storage
        of their resource is destroyed (its CRD deleted)."""
        self.ending = True
        self.wake.set()

    def stall(self, seconds: float) -> None:
        self.stalled_until = max(self.stalled_until, time.monotonic() + seconds)
        self.wake.set()


async def _wait(watcher: Watcher, seconds: float) -> None:
    """Until ``watcher`` is woken, or ``seconds`` (at most ``GONE_CHECK``) have passed."""
    watcher.wake.clear()
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(watcher.wake.wait(), timeout=min(max(seconds, 0.0), GONE_CHECK))


def _gone(request: web.Request) -> bool:
    """The client closed the connection. aiohttp tells a handler only when it next writes, so
    the stream looks every ``GONE_CHECK`` seconds, as Go's net/http cancels a request's
    context as soon as its connection closes (a real watch ends then, not at its next event
    or bookmark)."""
    return request.transport is None or request.transport.is_closing()


def bookmark(rt: ResourceType, rv: int, initial_end: bool = False,
             meta_only: bool = False) -> bytes:
    meta: dict[str, Any] = {"resourceVersion": str(rv)}
    if initial_end:  # v1.32 also describes the list an informer would have made of them
        blueprint = orjson.dumps({"kind": rt.list_kind, "apiVersion": rt.group_version,
                                  "metadata": {}, "items": None}) + b"\n"
        meta["annotations"] = {INITIAL_EVENTS_END: "true",
                               LIST_BLUEPRINT: base64.b64encode(blueprint).decode()}
    obj = {"kind": rt.kind, "apiVersion": rt.group_version, "metadata": meta}
    if meta_only:
        obj = partial(obj)
    return orjson.dumps({"type": "BOOKMARK", "object": obj}) + b"\n"


def buffer_size(store: Store, rt: ResourceType, flt: Filter) -> int:
    """The cacher's input plus result channel for this watch (see :mod:`backpressure`)."""
    pods = (rt.group, rt.plural) == ("", "pods")
    triggered = pods and any(label == "spec.nodeName" and equal
                             for label, equal, _ in flt.fields.terms)
    return 2 * channel_size(len(store.bucket(rt).history), pods, triggered)


def start(store: Store, rt: ResourceType, flt: Filter, query: dict[str, str],
          render: Render | None, meta_only: bool = False,
          capacity: int | None = None) -> tuple[Watcher, bool]:
    """Register a watcher and queue its starting events; True when it must end after them.
    ``capacity`` overrides the buffer size (None: as the cacher sizes it; 0: unbounded)."""
    if capacity is None:
        capacity = store.watcher_buffer
    if capacity is None:
        capacity = buffer_size(store, rt, flt)
    # the replayed history is not subject to the live buffer bound (the cacher serves it from
    # the cache interval before it reads its input channel)
    watcher = Watcher(rt, flt, render, meta_only, 0, store.bucket(rt).budget, store)
    rv_text = query.get("resourceVersion", "")
    streaming = "sendInitialEvents" in query  # a WatchList request (the query was validated)
    initial = bool(query_bool(query, "sendInitialEvents")) if streaming else rv_text in ("", "0")
    rv = resource_version(rv_text)
    if streaming and rv > store.rv:  # the cacher waits for it in vain, then says so
        error = errors.too_large_resource_version(rv, store.rv)
        watcher.buffer.append(orjson.dumps({"type": "ERROR", "object": error.status()}) + b"\n")
        return watcher, True
    if streaming and not initial and rv == 0:
        rv = store.rv  # sendInitialEvents=false and no version: from now on
    watcher.since = store.rv if initial else rv
    if initial:
        state = store.bucket(rt).objects
        for key in sorted(state):
            obj = state[key]
            if flt.matches(obj):
                watcher.buffer.append(watcher.line(Event(0, "ADDED", key, obj, None), "ADDED"))
        if query_bool(query, "sendInitialEvents") and query_bool(query, "allowWatchBookmarks"):
            watcher.buffer.append(bookmark(rt, store.rv, True, meta_only))
    else:
        try:
            events = store.events_since(rt, rv)
        except errors.ApiError as exc:
            watcher.buffer.append(
                orjson.dumps({"type": "ERROR", "object": exc.status()}) + b"\n")
            return watcher, True
        for event in events:
            watcher.offer(event)
    watcher.capacity, watcher.pending = capacity, 0
    store.bucket(rt).watchers.add(watcher)
    return watcher, False


async def stream(request: web.Request, store: Store, watcher: Watcher, finished: bool,
                 query: dict[str, str], bookmark_interval: float) -> web.StreamResponse:
    """Serve the chunked response until timeout, client disconnect, drop fault or finish."""
    resp = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
    resp.enable_chunked_encoding()
    timeout = float(query_int64(query, "timeoutSeconds") or 0)
    if timeout == 0:  # none of the client's: the server's, --min-request-timeout times 1 to 2
        timeout = random.uniform(MIN_REQUEST_TIMEOUT, 2 * MIN_REQUEST_TIMEOUT)
    deadline = time.monotonic() + timeout
    bookmarks = bool(query_bool(query, "allowWatchBookmarks")) and bookmark_interval > 0

    def next_bookmark_after(now: float) -> float:
        """``nextBookmarkTime``: every interval, and 2 s before the deadline; then never."""
        at = min(now + bookmark_interval, deadline - 2.0)
        return at if at >= now else float("inf")

    next_bookmark = next_bookmark_after(time.monotonic())
    try:
        await resp.prepare(request)
        while True:
            now = time.monotonic()
            if _gone(request):
                break
            if watcher.stalled_until > now and not watcher.closed:  # past the deadline too,
                await _wait(watcher, watcher.stalled_until - now)  # as a half-open connection
                continue
            if watcher.closed or ((now >= deadline or watcher.ending) and not watcher.buffer):
                break
            if bookmarks and now >= next_bookmark and not watcher.ending:
                last = store.bucket(watcher.rt).last_rv
                if last > watcher.since:  # the cacher's process(): only newer than the start
                    watcher.buffer.append(bookmark(watcher.rt, last, False, watcher.meta_only))
                next_bookmark = next_bookmark_after(now)
            if watcher.buffer:
                await resp.write(watcher.take())
                if finished:
                    break
                continue
            if finished or now >= deadline:
                break
            wait = deadline - now
            if bookmarks and next_bookmark < deadline:
                wait = min(wait, next_bookmark - now)
            await _wait(watcher, wait)
        await resp.write_eof()
    except ConnectionResetError:
        pass
    finally:
        watcher.closed = True  # a pending buffer check must not count it as terminated
        store.bucket(watcher.rt).watchers.discard(watcher)
    return resp
