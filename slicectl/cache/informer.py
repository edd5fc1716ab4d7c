"""Informer: keep a :class:`Store` of slim records equal to the server's objects, and say what
changed.

A list, then a WATCH from the list's resourceVersion with bookmarks and a jittered server
``timeoutSeconds``. The list is streamed (WatchList, client-go's ``sendInitialEvents``): one
watch request whose first events are the current state, ended by a BOOKMARK annotated
``k8s.io/initial-events-end``, after which the same stream goes on as a watch. The server
answers it from its watch cache, consistently (``resourceVersion`` unset): no LIST body to hold,
no etcd range read. An informer gets paginated LISTs from then on when the server refuses it
(422 before v1.27 or with the WatchList gate off), ignores it (a plain bookmark before the end
one), or when ``STREAM_TRIES`` streams in a row end before their end bookmark, whatever ended
them (a proxy cutting long responses, the server's timeout running out before a list too big
or ignored, a connection error): a stream cut once is streamed again after a backoff, and
client-go too falls back to a LIST when a watch-list fails. A request that got no event at all
cut nothing: answered with an error (a 503 or 429 while the server starts, a 404 while a CRD is
replaced) or not answered (the server down, a TLS handshake refused for a wrong CA), it backs
off as any failure, and the next list is streamed again. (The client resends a request first
where the server asks for that, a 429 or 5xx with a ``Retry-After``, and a paginated LIST's
GET whose connection broke: the informer sees only what those resends did not get past.)
Paginated LISTs:
a consistent first LIST (``resourceVersion=0`` would be answered whole, ignoring ``limit``, by
v1.32), relists ``NotOlderThan`` the last synced version (a 410 there: a consistent LIST).

Either way the state is applied as it arrives (:mod:`slicectl.cache.mirror` decides how each
item and event changes the store and what the handler is told), so a relist of 150k pods never
holds the whole list nor stalls the loop. After each list an optional ``on_listed`` hook is
told when that list was requested, so expectations about objects the store never saw (a write
acknowledged before it) can be settled.

A watch that ends normally, drops or stalls (no byte within the inactivity timeout) resumes
from the last resourceVersion seen, bookmarks included. A real server sends nothing at all on a
watch of a resource nobody writes, not even bookmarks (they carry only versions newer than the
watch's start), so a watch asks for a deadline (``timeoutSeconds``) inside the inactivity
timeout: a quiet watch ends there, cleanly, and only a half-open one outlives it. A streamed
list keeps the whole watch timeout (a big list must fit in it) and the informer itself ends the
watch after its end bookmark within that same bound. A 410 Gone or any ``ERROR`` event
means the resourceVersion is no longer usable: the informer lists again and emits exactly the
differences against its store (adds, updates for a changed resourceVersion, deletes for
vanished keys), never reusing the expired version. Failures back off (exponential, jittered,
capped at 30 s as client-go's reflector), or wait for the server's ``Retry-After`` (one the
client's ``MAX_RESENDS`` resends did not get past, or a Status's ``retryAfterSeconds`` alone,
as an ``ERROR`` event carries it), capped as the client caps it (``MAX_RETRY_AFTER``); a 429
keeps the resourceVersion (it was not processed), any other error answer relists. The backoff
ends early once the server answers another request again (:mod:`slicectl.kube.answers`).
Failures count in a row until a watch delivers an event or stays open ``HEALTHY_WATCH``
seconds, whatever ends it then (client-go backs off only after a "very short watch"): a proxy
that cuts every long watch must not grow the pause after each one to the cap. The list part of
a streamed list is not such a watch.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeGuard, TypeVar

import structlog

from slicectl.cache.handlers import InformerHandler, InformerStats, Versioned
from slicectl.cache.heap import release_after_list
from slicectl.cache.mirror import CHECK_EVERY, Mirror, Resync
from slicectl.cache.store import Store
from slicectl.kube.answers import EarlyResume, server_side
from slicectl.kube.client import MAX_RETRY_AFTER, KubeClient
from slicectl.kube.errors import ApiError, Gone, Invalid, TooManyRequests, WatchStalled
from slicectl.kube.resources import Resource
from slicectl.kube.watch import WatchEvent

_log = structlog.get_logger()
INITIAL_EVENTS_END = "k8s.io/initial-events-end"
HEALTHY_WATCH = 1.0  # seconds: a watch open this long (or that delivered) ends a failure streak
STREAM_TRIES = 2  # streamed lists in a row ended before their end bookmark: LISTs from then on


T = TypeVar("T", bound=Versioned)


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
        stream_lists: bool = True,
    ) -> None:
        self._client = client
        self._resource = resource
        self._namespace = namespace
        self._label_selector = label_selector
        self._field_selector = field_selector
        self._metadata_only = metadata_only
        self._page_size = page_size
        self._watch_timeout = watch_timeout
        self._inactivity_timeout = inactivity_timeout
        self._backoff_initial = backoff_initial
        self._backoff_max = backoff_max
        self._on_listed = on_listed  # called after each LIST with the time.monotonic() it began
        self._rv: str | None = None
        self._listed_rv: str | None = None  # the last version we synced to (never cleared)
        self._stream_lists = stream_lists  # cleared for good when the server refuses them
        self._cut_streams = 0  # streamed lists in a row that ended before their end bookmark
        # A shared store (several namespaced informers, one pod store) is fine: a relist only
        # deletes keys of its own namespace.
        self.store: Store[T] = store if store is not None else Store()
        self.synced = asyncio.Event()
        self.stats = InformerStats()
        self._resume = EarlyResume(client.answers)  # ends a backoff when the server is back
        self._log = _log.bind(resource=resource.plural, namespace=namespace or "")
        self._mirror = Mirror(self.store, parse, key, namespace, handler, self.stats, self._log,
                              self._delivered)

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
            attempt = _Attempt()
            error: Exception | None = None
            try:
                if self._rv is None and not self._stream_lists:
                    await self._relist()
                await self._watch(self._rv, attempt)  # from no version: a streamed list first
            except Exception as exc:
                error = exc
            healthy = attempt.healthy()
            if healthy:  # whatever ended it: no streak of failures
                failures = 0
                self.stats.consecutive_failures = 0
            if attempt.streaming and not isinstance(error, _StreamRefused):
                self._count_stream(attempt.listed)  # nothing streamed (no answer, an error
                # answer): no cut
            if error is not None:
                delay = self._recover(error, failures)
            elif healthy:
                delay = None
            else:
                delay = self._backoff(failures)  # ended at once, nothing delivered: slow down
            if delay is None:
                continue
            failures += 1
            if delay:
                self.stats.failures += 1
                self.stats.consecutive_failures += 1
                await self._pause(delay, early=error is None or server_side(error))

    def _recover(self, error: Exception, failures: int) -> float | None:
        """Log what ended a round and set up the next: None to go on at once (not a failure),
        else a failure and the seconds to wait first (0: at once)."""
        if isinstance(error, WatchStalled):
            self.stats.stalls += 1
            self._log.warning("informer_watch_stalled", resource_version=self._rv)
            return None
        if isinstance(error, _StreamRefused):
            self._stream_lists = False
            self._log.info("informer_streaming_list_unsupported", reason=str(error)[:300])
            return None
        if isinstance(error, Gone):
            self._log.info("informer_expired", resource_version=self._rv)
            self._forget_version()
            return self._backoff(failures) if failures else 0.0
        if isinstance(error, ApiError):
            if not isinstance(error, TooManyRequests):  # a 429 was not processed: same again
                self._forget_version()  # an ERROR event or a failed request: start from a list
                self._log.warning("informer_api_error", status=error.status, error=str(error))
            if error.retry_after:
                return min(error.retry_after, MAX_RETRY_AFTER)
            return self._backoff(failures)
        self._log.warning("informer_connection_error", error=repr(error))
        return self._backoff(failures)  # resume the watch after a pause

    def _forget_version(self) -> None:
        """Never reuse a resourceVersion the server refused; keep it as the relist's lower
        bound."""
        self._listed_rv = self._rv or self._listed_rv
        self._rv = None

    def _count_stream(self, listed: bool) -> None:
        """A streamed list ended: ``STREAM_TRIES`` in a row without their end bookmark, and
        paginated LISTs from then on."""
        if listed:
            self._cut_streams = 0
            return
        self._cut_streams += 1
        if self._cut_streams >= STREAM_TRIES:
            self._stream_lists = False
            self._log.info("informer_streaming_list_unsupported",
                           reason=f"{self._cut_streams} streamed lists in a row ended before "
                                  "the end of their initial events")

    async def _pause(self, delay: float, *, early: bool) -> None:
        """Back off ``delay`` seconds, less if ``early`` and the server answers again
        (:class:`slicectl.kube.answers.EarlyResume`)."""
        await self._resume.pause(delay, early=early)

    def _backoff(self, failures: int) -> float:
        ceiling = min(self._backoff_max, self._backoff_initial * (2.0 ** min(failures, 30)))
        return ceiling * random.uniform(0.5, 1.0)

    async def _relist(self) -> None:
        """A paginated LIST, applied page by page (see the module docstring)."""
        rv_arg: str | None
        if self._listed_rv:  # not older than what we have seen: the watch cache may answer
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
        resync = Resync(time.monotonic())
        pages = self._client.list_pages(
            self._resource, self._namespace, label_selector=self._label_selector,
            field_selector=self._field_selector, limit=self._page_size,
            metadata_only=self._metadata_only, resource_version=rv_arg,
            resource_version_match=match,
        )
        rv = ""
        async with contextlib.aclosing(pages):
            async for page in pages:
                if page.restarted:
                    resync.kept.clear()
                rv = page.resource_version
                for i, raw in enumerate(page.items):  # decoded one by one as we go
                    if i % CHECK_EVERY == 0:
                        await resync.pause()  # big pages must not stall the loop
                    self._mirror.list_item(resync, raw)
                del page
                await asyncio.sleep(0)
                resync.slice_start = time.monotonic()
        await self._finish_list(resync, rv)

    async def _finish_list(self, resync: Resync, rv: str) -> None:
        """Delete what the list did not show, then mark the informer synced at ``rv``."""
        deleted = await self._mirror.drop_unlisted(resync)
        kept = resync.kept
        if self.stats.lists:
            self.stats.relists += 1
        self.stats.lists += 1
        self._rv = self._listed_rv = rv
        self._log.info(
            "informer_listed", items=len(kept), added_or_updated=resync.changed,
            deleted=deleted, resource_version=rv,
        )
        release_after_list(len(kept))
        if self._on_listed is not None:
            try:
                self._on_listed(resync.started)
            except Exception:
                self._log.exception("informer_listed_hook_failed")
        self.synced.set()

    async def _watch(self, rv: str | None, attempt: _Attempt) -> None:
        """Watch from ``rv`` until the stream ends, noting in ``attempt`` how far it got.
        Without ``rv``, a streamed list: the initial events resync the store, then the watch
        goes on (unless the stream ended before the list did)."""
        # A streamed list keeps the whole timeout (a big list must fit in it); the watch that
        # follows its end bookmark ends, here, by the quiet watch's deadline.
        timeout = self._server_timeout(quiet_bound=rv is not None)
        self.stats.watches += 1
        stream = self._client.watch(
            self._resource, self._namespace, resource_version=rv or "",
            label_selector=self._label_selector, field_selector=self._field_selector,
            timeout_seconds=timeout, allow_bookmarks=True, metadata_only=self._metadata_only,
            inactivity_timeout=self._inactivity_timeout or timeout + 30.0,
            send_initial_events=rv is None,
        )
        events = self.stats.events
        async with contextlib.aclosing(stream):
            if rv is None:
                attempt.listed = await self._stream_list(stream, attempt)
                if not attempt.listed:
                    return
            attempt.watching = time.monotonic()
            limit = asyncio.timeout(self._server_timeout(quiet_bound=True) if rv is None
                                    else None)
            try:
                async with limit:
                    async for kind, obj in stream:
                        attempt.events = True
                        events[kind] = events.get(kind, 0) + 1
                        if kind != "BOOKMARK":
                            self._mirror.apply(kind, obj)
                        elif isinstance(meta := obj.get("metadata"), dict) and (
                                version := meta.get("resourceVersion")):
                            self._rv = str(version)
            except TimeoutError:
                if not limit.expired():
                    raise
                # ended as a server's timeout ends a watch: resumed from the last version

    def _server_timeout(self, *, quiet_bound: bool) -> int:
        """A watch's timeoutSeconds: the watch timeout jittered, with ``quiet_bound`` inside
        the inactivity timeout too. A real server sends nothing at all, not even a bookmark,
        on a watch of a resource nothing writes (its bookmarks carry only versions newer than
        the watch's start), so only the end it owes at its deadline tells a quiet watch from a
        half-open connection."""
        seconds = float(self._watch_timeout)
        if quiet_bound and self._inactivity_timeout:
            seconds = min(seconds, 0.75 * self._inactivity_timeout)
        return max(1, int(seconds * random.uniform(0.9, 1.1)))

    async def _stream_list(self, stream: AsyncIterator[WatchEvent], attempt: _Attempt) -> bool:
        """The initial events of a streamed list, applied as a list is; True once its end
        bookmark came (the store is then synced to it), False if the stream ended first."""
        resync = Resync(time.monotonic())  # the request goes out at the first event asked for
        events = self.stats.events
        got_events = False
        try:
            async for kind, obj in stream:
                got_events = attempt.streaming = True
                events[kind] = events.get(kind, 0) + 1
                if kind == "BOOKMARK":
                    meta = obj.get("metadata")
                    if not _ends_initial_events(meta):  # a streaming server sends its end first
                        raise _StreamRefused("a bookmark came before the end of the initial "
                                             "events")
                    await self._finish_list(resync, str(meta.get("resourceVersion") or ""))
                    self.stats.streamed_lists += 1
                    return True  # the same stream goes on as a watch
                if kind == "DELETED":
                    self._mirror.apply(kind, obj, advance=False)
                else:
                    self._mirror.list_item(resync, obj)
                    if events[kind] % CHECK_EVERY == 0:
                        await resync.pause()
        except Invalid as exc:
            if not got_events:
                raise _StreamRefused(str(exc)) from exc
            raise
        return False

    def _delivered(self, version: str) -> None:
        """A watch event delivered ``version``: the one to resume from."""
        self._rv = version


class _StreamRefused(Exception):
    """The server does not stream lists (WatchList): paginated LISTs from now on."""


@dataclass
class _Attempt:
    """One round of :meth:`Informer.run` (a list, then a watch): how far it got, whatever
    ended it."""

    streaming: bool = False  # its list was asked for as a stream and an event of it came
    listed: bool = False  # a streamed list's end bookmark came
    watching: float | None = None  # time.monotonic() when the watch proper was requested
    events: bool = False  # the watch proper delivered an event (a bookmark too)

    def healthy(self) -> bool:
        """The watch proper delivered, or stayed open ``HEALTHY_WATCH`` seconds."""
        return self.events or (
            self.watching is not None and time.monotonic() - self.watching >= HEALTHY_WATCH)


def _ends_initial_events(meta: Any) -> TypeGuard[dict[str, Any]]:
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    return isinstance(annotations, dict) and annotations.get(INITIAL_EVENTS_END) == "true"
