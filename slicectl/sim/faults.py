"""Fault injection: what can go wrong between a client and a real API server, on demand.

Faults that strike BEFORE the server acts, per resource request: latency (for every request,
or per resource, e.g. Lease requests alone, as when etcd is slow for one key range), a 500
(InternalError, or with ``error_retry_after`` a ServerTimeout with Retry-After) or a 429 as
API Priority and Fairness rejects a request (plain text, no Status, with Retry-After).

Faults that strike AFTER the server acted, per write (create, update, patch, delete): the write
is applied and then the connection is reset so the client never sees the answer
(``lost_response_rate``), or the answer is replaced by a 500 (``error_after_rate``, as when the
etcd commit outlived the request timeout; a ServerTimeout with ``error_retry_after``, which a
client resends, so a create lands twice). A client cannot tell these from the faults before, so
it must retry in a way that survives both (no duplicate from a create retried after it landed).
The answer can also be held per resource (``answer_latency``) after the write's watch events
went out, so another client can act on the new object before its writer hears back.

Discovery requests can fail too (``discovery_error_rate``: 503, as when an aggregated API is
down). Faults on streams: open watches dropped (their responses end cleanly, as when an apiserver
restarts gracefully), reset (the connection is cut in the middle of the chunked body), stalled
(the connection stays open and nothing, not even a bookmark, is sent for a while; events queued
meanwhile are delivered afterwards; a periodic stall lasts half its period), fed raw lines
(malformed JSON, truncated objects) or cut after a partial line; a LIST answer cut in the middle
of its body (``list_reset_rate``). ``compact`` forgets the event history, so watches and continue
tokens from older resourceVersions get 410 Expired.

``restart`` is an API server restart with etcd kept: objects and resourceVersions stay, the watch
cache starts empty (every resume gets 410), every connection is reset, and for ``down_for``
seconds every new request is reset too (the listener is not up yet; ``down`` alone does that).

The server calls four hooks: :meth:`Faults.before_request`, :meth:`Faults.watching` around a
watch stream, :meth:`Faults.after_request` with the response it is about to send, and
:meth:`Faults.non_resource` for discovery.
``spared_agent`` exempts one client from the request faults (before and after acting, the
restart's refusals and resets): requests whose User-Agent starts with it are served plainly. A
test that drives the world (creates pods, edits selectors, judges the slices) through such a
client faults only the client under test. Stream faults (watches dropped, reset, stalled,
compaction) strike every watch.
``record_writes`` keeps a log of writes (time, verb, resource, name, client port) for tests that
must tell writers apart.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson
from aiohttp import web

from slicectl.sim import errors
from slicectl.sim.routing import RequestInfo
from slicectl.sim.storage import Store
from slicectl.sim.watch import Watcher

TICK = 0.05
WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})


@dataclass(frozen=True)
class WriteRecord:
    """One write as the server received it."""

    at: float  # time.monotonic() when the server acted
    verb: str
    resource: str
    namespace: str
    name: str
    code: int
    client_port: int  # the client's TCP source port, to tell processes apart


class Faults:
    def __init__(self, store: Store) -> None:
        # before the server acts
        self.latency_ms = 0.0
        # extra seconds for one resource ("leases"; its subresources too) or subresource
        # ("endpointselectors/status", which then wins over its resource's entry)
        self.resource_latency: dict[str, float] = {}
        # 500 rate for one resource ("pods") or subresource ("endpointselectors/status")
        self.resource_error_rate: dict[str, float] = {}
        self.error_rate = 0.0
        self.error_retry_after = 0  # >0: the injected 500s (before or after the server acted)
        # are ServerTimeouts with this Retry-After (seconds), as when etcd is slow to answer
        self.throttle_rate = 0.0
        self.discovery_error_rate = 0.0  # 503 on discovery (/api, /apis/...), as when an
        # aggregated API is unavailable
        # after the server acted (writes only)
        self.lost_response_rate = 0.0
        self.error_after_rate = 0.0
        self.after_resources: frozenset[str] = frozenset()  # only these plurals (empty: all)
        # resource plural -> seconds the answer to a write is held, its watch events sent (a
        # busy server or a slow network: another client can act on the echo before the answer)
        self.answer_latency: dict[str, float] = {}
        # streams
        self.list_reset_rate = 0.0
        self.drop_watches_every = 0.0
        self.stall_watches_every = 0.0
        self.reset_watches_every = 0.0
        # a User-Agent prefix whose requests no request fault touches (module docstring)
        self.spared_agent = ""
        # what happened
        self.injected: dict[str, int] = {}
        self.record_writes = False
        self.writes: list[WriteRecord] = []
        self._store = store
        self._down_until = 0.0
        self._watches: dict[int, tuple[web.BaseRequest, RequestInfo]] = {}
        self._transports: set[asyncio.BaseTransport] = set()
        self._task: asyncio.Task[None] | None = None

    def _note(self, what: str) -> None:
        self.injected[what] = self.injected.get(what, 0) + 1

    def _spared(self, request: web.BaseRequest | None) -> bool:
        return (request is not None and bool(self.spared_agent)
                and request.headers.get("User-Agent", "").startswith(self.spared_agent))

    def _watchers(self, resource: str | None = None) -> list[Watcher]:
        found: list[Watcher] = []
        for bucket in self._store.buckets.values():
            found.extend(w for w in bucket.watchers if isinstance(w, Watcher)
                         and (resource is None or w.rt.plural == resource))
        return found

    # -- watches ----------------------------------------------------------------------------

    def open_watches(self, resource: str | None = None) -> int:
        """How many watches (of ``resource``, a plural) are open now."""
        return len(self._watchers(resource))

    def drop_watches(self) -> int:
        """End every open watch now (cleanly); returns how many there were."""
        watchers = self._watchers()
        for watcher in watchers:
            watcher.close()
        return len(watchers)

    def stall_watches(self, seconds: float, resource: str | None = None) -> int:
        """Send nothing on every open watch (of ``resource``) for ``seconds``, not even its end
        at the deadline (a half-open connection); returns how many there were. Events are
        delivered late, not lost."""
        watchers = self._watchers(resource)
        for watcher in watchers:
            watcher.stall(seconds)
        return len(watchers)

    def reset_watches(self, resource: str | None = None) -> int:
        """Cut the connection of every open watch (of ``resource``) in the middle of its body."""
        cut = 0
        for request, info in list(self._watches.values()):
            if resource is None or info.resource == resource:
                cut += _reset(request)
        self._note("watch_reset")
        return cut

    def inject_watch_line(self, resource: str, line: bytes, *, truncate: bool = False) -> int:
        """Send raw ``line`` on every open watch of ``resource`` (a malformed event, an object
        that bypassed validation); with ``truncate``, cut each connection right after it (a
        stream that ends in the middle of a line). Returns how many watches got it."""
        watchers = self._watchers(resource)
        for watcher in watchers:
            watcher.send_raw(line)
            if truncate:  # nothing more goes out on it: a cut stream ends with the partial line
                watcher.offer = _discard  # type: ignore[method-assign]
        if truncate and watchers:
            asyncio.get_running_loop().call_later(0.2, self.reset_watches, resource)
        self._note("watch_line")
        return len(watchers)

    def compact(self) -> None:
        self._store.compact()

    def reset_connections(self) -> int:
        """Reset every client connection the server has seen (idle keep-alives included)."""
        cut = sum(_abort(t) for t in list(self._transports))
        self._transports.clear()
        return cut

    def restart(self, down_for: float = 0.0) -> None:
        """An API server restart with etcd kept (see the module docstring)."""
        self._store.compact()
        self.drop_watches()
        self.reset_connections()
        self.down(down_for)
        self._note("restart")

    def down(self, seconds: float) -> None:
        """For ``seconds`` from now, reset every new request before it is read, as a server
        going away does (0: serve them again)."""
        self._down_until = time.monotonic() + seconds

    # -- hooks ------------------------------------------------------------------------------

    async def before_request(self, request: web.BaseRequest | None = None,
                             info: RequestInfo | None = None) -> None:
        """Latency, then maybe a 500 or a 429, for one resource request."""
        if self._spared(request):
            return
        transport = request.transport if request is not None else None
        if transport is not None:
            self._transports.add(transport)
            if time.monotonic() < self._down_until:
                _abort(transport)
                raise errors.internal("injected fault: the API server is restarting")
        delay = self.latency_ms / 1000.0
        if info is not None and self.resource_latency:
            held = self.resource_latency.get(info.resource, 0.0)
            if info.subresource:
                held = self.resource_latency.get(f"{info.resource}/{info.subresource}", held)
            delay += held
        if delay > 0:
            await asyncio.sleep(delay)
            if transport is not None and transport.is_closing():
                # the client gave up while the request was held: nothing left to answer
                raise errors.internal("injected fault: the client went away")
        rate = self.error_rate
        if info is not None and self.resource_error_rate:
            rate = self.resource_error_rate.get(
                f"{info.resource}/{info.subresource}" if info.subresource else info.resource,
                rate)
        if rate > 0 and random.random() < rate:
            self._note("error_before")
            if self.error_retry_after > 0 and info is not None:
                raise errors.server_timeout(info.resource, info.group, info.verb,
                                            self.error_retry_after)
            raise errors.internal("injected fault")
        if self.throttle_rate > 0 and random.random() < self.throttle_rate:
            self._note("throttle_before")
            raise errors.flow_control_rejected(1)

    def non_resource(self, request: web.BaseRequest) -> web.Response | None:
        """Maybe a 503 for a discovery request (None: serve it)."""
        if not request.path.startswith(("/api", "/apis")) or self._spared(request):
            return None
        if self.discovery_error_rate > 0 and random.random() < self.discovery_error_rate:
            self._note("discovery_error")
            exc = errors.ApiError(503, "ServiceUnavailable", "injected fault: discovery failed")
            return web.Response(body=_status_body(exc), status=exc.code,
                                content_type="application/json")
        return None

    @contextlib.contextmanager
    def watching(self, request: web.BaseRequest, info: RequestInfo) -> Iterator[None]:
        """Around one watch stream, so :meth:`reset_watches` can cut it."""
        self._watches[id(request)] = (request, info)
        try:
            yield
        finally:
            self._watches.pop(id(request), None)

    async def after_request(self, request: web.BaseRequest, info: RequestInfo,
                            response: web.StreamResponse, client_port: int,
                            ) -> web.StreamResponse:
        """The response to send, once the server acted: maybe lost, replaced or cut short.
        ``client_port`` is the client's, taken when the request arrived (a client killed
        while its write was processed has no peer any more)."""
        acted = (info.verb in WRITE_VERBS and response.status < 400
                 and (not self.after_resources or info.resource in self.after_resources))
        if info.verb in WRITE_VERBS and self.record_writes:
            self.writes.append(WriteRecord(
                time.monotonic(), info.verb, info.resource, info.namespace, info.name,
                response.status, client_port))
        if self._spared(request):
            return response
        if acted and (hold := self.answer_latency.get(info.resource, 0.0)) > 0:
            self._note("answer_latency")
            await asyncio.sleep(hold)
        if acted and self.lost_response_rate > 0 and random.random() < self.lost_response_rate:
            self._note("lost_response")
            _reset(request)
            return response
        if acted and self.error_after_rate > 0 and random.random() < self.error_after_rate:
            self._note("error_after")
            seconds = self.error_retry_after
            exc = (errors.server_timeout(info.resource, info.group, info.verb, seconds) if seconds
                   else errors.internal("injected fault after the write was applied"))
            return web.Response(body=_status_body(exc), status=exc.code,
                                content_type="application/json",
                                headers={"Retry-After": str(seconds)} if seconds > 0 else None)
        if (info.verb == "list" and self.list_reset_rate > 0 and isinstance(response, web.Response)
                and random.random() < self.list_reset_rate):
            self._note("list_reset")
            return await _cut_body(request, response)
        return response

    # -- periodic faults --------------------------------------------------------------------

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def _run(self) -> None:
        last = dict.fromkeys(("drop", "stall", "reset"), time.monotonic())
        while True:
            await asyncio.sleep(TICK)
            now = time.monotonic()
            for what, every in (("drop", self.drop_watches_every),
                                ("stall", self.stall_watches_every),
                                ("reset", self.reset_watches_every)):
                if every <= 0 or now - last[what] < every:
                    if every <= 0:
                        last[what] = now
                    continue
                last[what] = now
                if what == "drop":
                    self.drop_watches()
                elif what == "stall":
                    self.stall_watches(every / 2)
                else:
                    self.reset_watches()
            self._transports = {t for t in self._transports if not t.is_closing()}


def _discard(event: object) -> None:
    """A cut watcher's ``offer``: the events are not lost, the client resumes before them."""


def _abort(transport: asyncio.BaseTransport) -> int:
    if transport.is_closing():
        return 0
    abort = getattr(transport, "abort", None)
    if abort is None:
        transport.close()
    else:
        abort()
    return 1


def _reset(request: web.BaseRequest) -> int:
    return _abort(request.transport) if request.transport is not None else 0


def _status_body(exc: errors.ApiError) -> bytes:
    body: dict[str, Any] = exc.status()
    return orjson.dumps(body)


async def _cut_body(request: web.BaseRequest, response: web.Response) -> web.StreamResponse:
    """Send the headers and half of ``response``'s body, then reset the connection."""
    body = bytes(response.body or b"")  # type: ignore[arg-type]
    cut = web.StreamResponse(status=response.status, headers=response.headers)
    cut.content_length = len(body)
    with contextlib.suppress(ConnectionError):
        await cut.prepare(request)
        await cut.write(body[: len(body) // 2])
    _reset(request)
    return cut
