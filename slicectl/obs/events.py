"""Kubernetes Events (events.k8s.io/v1) about EndpointSelectors, aggregated and rate limited.

Decisions, following client-go's ``tools/events`` broadcaster and its spam filter:

* An event is identified by (regarding object, type, reason, note, action). A repeat of one
  seen within ``series_window`` does not create a new Event: it bumps the cached series
  (``count``, ``lastObservedTime``) and the existing Event is PATCHed with ``series``. Patches of
  one series go out at most once per ``series_interval``; counts in between are accumulated and
  written by a background flush (and by :meth:`EventRecorder.flush`). The note is part of the
  key, unlike in ``tools/events``, whose series of one (regarding, reason, action) keeps the
  first note however later ones differ (an Event's note is immutable): an operator reads what
  each failure said. ``tools/record``'s aggregation (an 11th similar Event in 10 minutes
  becomes "(combined from similar events)") is not built: the bucket below bounds the writes
  as its spam filter does, and only the Events of a burst number up to 25 rather than 11.
* Each regarding object has a token bucket (``burst`` writes, then one per ``refill_seconds``,
  like client-go's 25 / 5 min), so a selector failing in a loop cannot flood the API server. A
  new event over the limit is dropped; a series increment waits for the next flush.
* A write the server rejects (a 4xx: the namespace is gone or terminating, RBAC, an invalid Event)
  is not retried, as client-go's ``recordToSink`` does not; failures that can pass (5xx, connection
  errors) are retried by the flush, under the Event's first name, so a create that landed while its
  answer was lost is a 409 (created) rather than a second Event. Kept pending, a rejected Event was
  re-sent for ever and its series never forgotten. A rejection is logged as a warning (client-go
  logs it as an error), except those a namespace's deletion brings (404, 403 NamespaceTerminating):
  without it a Role lacking ``create`` on events went unnoticed.
* Recording is fire-and-forget: :meth:`EventRecorder.event` is synchronous, never raises and
  never waits for the API; failures that may pass are logged at debug level. It says whether
  the event was only a repeat of a series, so a caller logs a persistent problem once per
  series, not once per occurrence.
* Field limits of the API validation are applied (reason/action 128, note 1024,
  reportingInstance 128, all in UTF-8 bytes as the server counts them; the Event's name at
  most 253 characters however long the regarding object's name) instead of losing the event
  to a 422.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from slicectl.kube.client import KubeClient
from slicectl.kube.errors import (
    NAMESPACE_TERMINATING,
    AlreadyExists,
    ApiError,
    Forbidden,
    NotFound,
)
from slicectl.kube.ratelimit import TokenBucket
from slicectl.kube.resources import EVENTS
from slicectl.model.records import SelectorRecord
from slicectl.model.timefmt import micro_time

log = logging.getLogger(__name__)

NORMAL = "Normal"
WARNING = "Warning"
NOTE_LIMIT = 1024
FIELD_LIMIT = 128
NAME_LIMIT = 253  # an Event's name is a DNS subdomain


def clip(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` UTF-8 bytes (the server's ``len``), whole characters."""
    raw = text.encode()
    return text if len(raw) <= limit else raw[:limit].decode("utf-8", "ignore")


def event_name(regarding_name: str, now_ns: int) -> str:
    """``<regarding name>.<time in hex>`` as client-go names Events, the name cut short enough
    for the whole to stay a valid DNS subdomain (a selector's name may be 253 characters)."""
    suffix = f".{now_ns:x}"
    prefix = regarding_name[: NAME_LIMIT - len(suffix)].rstrip(".-")
    return f"{prefix or 'event'}{suffix}"


def _refused(exc: ApiError) -> bool:
    """The server rejected the write for good (its namespace is gone or terminating, RBAC, an
    invalid Event), rather than failing for now (a 5xx, a 429)."""
    return exc.status < 500 and exc.status != 429


def _routine(exc: ApiError) -> bool:
    """A rejection that comes with deleting a namespace (404, 403 NamespaceTerminating) or a
    create that already landed (409): no news for the operator, unlike RBAC (403), credentials
    (401) or an invalid Event (422), which client-go logs as errors."""
    return isinstance(exc, NotFound | AlreadyExists) or (
        isinstance(exc, Forbidden) and exc.has_cause(NAMESPACE_TERMINATING))


def selector_reference(selector: SelectorRecord) -> dict[str, str]:
    """The ``regarding`` objectReference of an EndpointSelector of any flavour."""
    return {
        "apiVersion": selector.api.api_version,
        "kind": selector.api.kind,
        "namespace": selector.namespace,
        "name": selector.name,
        "uid": selector.uid,
        "resourceVersion": selector.resource_version,
    }


@dataclass
class _Series:
    body: dict[str, Any]  # the Event as (to be) created
    count: int = 1
    written_count: int = 0
    created: bool = False
    last_seen: float = 0.0  # our clock
    last_written: float = float("-inf")
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class EventRecorder:
    def __init__(
        self,
        client: KubeClient,
        component: str = "slicectl",
        reporting_instance: str = "",
        *,
        series_window: float = 360.0,
        series_interval: float = 30.0,
        burst: int = 25,
        refill_seconds: float = 300.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._client = client
        self.component = component
        self.instance = clip(reporting_instance or socket.gethostname(), FIELD_LIMIT)
        self._window = series_window
        self._interval = series_interval
        self._burst = burst
        self._refill = refill_seconds
        self._clock = clock
        self._series: dict[tuple[str, ...], _Series] = {}
        self._buckets: dict[str, TokenBucket] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._flusher: asyncio.Task[None] | None = None

    def __len__(self) -> int:
        """The series held: each until ``series_window`` after its last repeat."""
        return len(self._series)

    def event(
        self,
        regarding: Mapping[str, str],
        event_type: str,
        reason: str,
        note: str,
        action: str = "Reconcile",
    ) -> bool:
        """Record an event about ``regarding``; returns at once, never raises.

        Returns False when the event only repeats a series (counted into it), so a caller
        that also logs it can say it once per series rather than on every repeat."""
        try:
            return self._record(regarding, event_type, reason, clip(note, NOTE_LIMIT), action)
        except Exception:  # an event must never break the caller
            log.debug("recording event failed", exc_info=True)
            return True

    def _record(
        self, regarding: Mapping[str, str], event_type: str, reason: str, note: str, action: str
    ) -> bool:
        now = self._clock()
        obj = regarding.get("uid") or f"{regarding.get('namespace')}/{regarding.get('name')}"
        key = (obj, event_type, reason, note, action)
        series = self._series.get(key)
        if series is not None and now - series.last_seen <= self._window:
            series.count += 1
            series.last_seen = now
            series.body["series"] = {"count": series.count, "lastObservedTime": micro_time()}
            if now - series.last_written >= self._interval and self._take(obj):
                self._spawn(self._write(series))
            self._ensure_flusher()
            return False
        if not self._take(obj):
            log.debug("event %s about %s dropped by the spam filter", reason, obj)
            return True
        series = _Series(body=self._new_body(regarding, event_type, reason, note, action))
        series.last_seen = now
        self._series[key] = series
        self._spawn(self._write(series))
        self._ensure_flusher()
        return True

    def _new_body(
        self, regarding: Mapping[str, str], event_type: str, reason: str, note: str, action: str
    ) -> dict[str, Any]:
        namespace = regarding.get("namespace") or "default"
        return {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"namespace": namespace},
            "eventTime": micro_time(),
            "reportingController": self.component,
            "reportingInstance": self.instance,
            "action": clip(action, FIELD_LIMIT),
            "reason": clip(reason, FIELD_LIMIT),
            "note": note,
            "type": event_type,
            "regarding": {k: v for k, v in regarding.items() if v},
        }

    def _take(self, obj: str) -> bool:
        """Token bucket per regarding object: ``burst`` writes, then one per ``refill``."""
        bucket = self._buckets.get(obj)
        if bucket is None:
            bucket = self._buckets[obj] = TokenBucket(1.0 / self._refill, self._burst,
                                                      clock=self._clock)
        return bucket.try_take()

    def _spawn(self, coro: Any) -> None:
        task: asyncio.Task[None] = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _write(self, series: _Series) -> None:
        """Create the Event, or patch its series; one write at a time per series."""
        async with series.lock:
            if series.written_count == series.count:
                return  # written (or rejected) meanwhile
            count = series.count
            series.last_written = self._clock()
            try:
                if series.created:
                    await self._patch_series(series)
                else:
                    await self._create(series)
                series.written_count = count
            except ApiError as exc:
                if not _refused(exc):
                    log.debug("event write failed: %s", exc)
                    return
                series.written_count = count  # as client-go: rejected, it will not retry
                if _routine(exc):
                    log.debug("event write rejected: %s", exc)
                else:
                    body = series.body
                    log.warning("event %s about %s/%s rejected, not retried: %s",
                                body["reason"], body["regarding"].get("namespace"),
                                body["regarding"].get("name"), exc)
            except Exception:
                log.debug("event write failed", exc_info=True)

    async def _create(self, series: _Series) -> None:
        """Create the Event under the name of its first attempt: as client-go resends the same
        object, a create that landed while its answer was lost comes back as 409 on the resend,
        which means created, where a fresh name would store the occurrence twice."""
        body = series.body
        meta = body["metadata"]
        meta.setdefault("name", event_name(body["regarding"].get("name", ""), time.time_ns()))
        try:
            await self._client.create(EVENTS, body, meta["namespace"], background=True)
        except AlreadyExists:
            series.created = True
            if "series" in body:  # the stored one may predate the latest repeats
                await self._patch_series(series)
            return
        series.created = True

    async def _patch_series(self, series: _Series) -> None:
        meta = series.body["metadata"]
        try:
            await self._client.patch(
                EVENTS, meta["name"], {"series": series.body["series"]}, meta["namespace"],
                patch_type="merge", background=True)
        except NotFound:  # expired or deleted: start over with a new Event carrying the series
            del meta["name"]
            await self._create(series)

    # -- background flush ----------------------------------------------------------------------

    def _ensure_flusher(self) -> None:
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.get_running_loop().create_task(self._flush_loop())

    async def _flush_loop(self) -> None:
        while self._series:
            await asyncio.sleep(self._interval)
            self._flush(self._clock(), force=False)

    def _flush(self, now: float, *, force: bool) -> None:
        for key, series in list(self._series.items()):
            obj = key[0]
            pending = series.count != series.written_count
            if pending and (force or self._take(obj)):
                self._spawn(self._write(series))
            elif not pending and now - series.last_seen > self._window:
                del self._series[key]
        for obj, bucket in list(self._buckets.items()):
            if bucket.full():
                del self._buckets[obj]  # full again: forgetting it changes nothing

    async def flush(self) -> None:
        """Write pending series counts now and wait for every write in flight.

        Call it at shutdown; the recorder stays usable afterwards.
        """
        if self._flusher is not None:
            self._flusher.cancel()
            await asyncio.gather(self._flusher, return_exceptions=True)
            self._flusher = None
        self._flush(self._clock(), force=True)
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
