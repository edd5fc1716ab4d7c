"""The work queue: which selector is synced next, and when.

Keys are selector keys (``namespace/name``). The rules are the client-go workqueue's, made
explicit because every one of them prevents a production bug:

* a key is never handed to two workers at once;
* a key added while it is being processed runs again after ``done`` (nothing is lost);
* a pending key is held once: adding it again keeps the *earliest* ready time (never a sliding
  window that a steady trickle could starve);
* a batched key (``add(..., batch=W)``) is due when its batching state says so
  (:mod:`slicectl.controller.batching`: leading edge, streams, settling);
* ``add(..., min_interval=M)`` holds a key until M seconds after its last sync started (at once
  if it has not been synced that long): syncs caused by someone else's slice changes use it, as
  upstream's ``endpointSliceChangeMinSyncDelay`` does, so a repair that is undone each time (a
  selector deleted while its watch lags: the garbage collector deletes every slice recreated
  for it) costs one write per M, not a hot loop;
* failures retry with per-key exponential backoff (floor 1 s, as upstream moved to because 5 ms
  hammered a failing API server; cap 5 min) under a global token bucket, and a key is never
  dropped however often it fails (upstream gives up after 15 tries and leaves stale slices
  behind). Only a fully successful sync resets a key's backoff (:meth:`WorkQueue.forget`); a
  409 on one slice is not a failure at all (the writer refreshes that slice and retries at once).

It also remembers, per key, the wall-clock time of the oldest change not yet synced: that is
the ``last-change-trigger-time`` the resulting write reflects. A change with no time of its own
(a pod deleted or relabelled, a spec or Node change) is added as :data:`UNDATED`: a change all
the same (the key is due, the selector busy), but it dates nothing, so a write reflecting only
such changes carries no trigger time, as upstream's tracker finds none and removes the
annotation.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from slicectl.controller.batching import STREAM_MAX_WINDOW, TIMER_SLACK, Edge, Streams
from slicectl.kube.ratelimit import TokenBucket

UNDATED = math.inf  # ``changed_at`` of a change with no time of its own (module docstring)


def dated(trigger: float | None) -> float | None:
    """A sync's trigger time as a wall-clock time, or None: no change, or none dated."""
    return None if trigger is None or trigger == UNDATED else trigger


_EDGE_PRUNE_EVERY = 1024  # gets between sweeps of the per-key batching state
_LAST_START_KEEP = 60.0  # seconds a key's last sync start is remembered for ``min_interval``


class ShutDown(Exception):
    """Raised by :meth:`WorkQueue.get` once the queue is shut down."""


@dataclass(frozen=True, slots=True)
class Backoff:
    """Per-key exponential backoff: ``base * 2**failures``, capped."""

    base: float = 1.0
    cap: float = 300.0

    def delay(self, failures: int) -> float:
        return min(self.cap, self.base * float(1 << min(failures, 40)))


@dataclass(slots=True)
class QueueStats:
    adds: int = 0
    retries: int = 0


class WorkQueue:
    """An asyncio delaying, deduplicating, rate-limited queue of string keys."""

    def __init__(
        self,
        backoff: Backoff = Backoff(),
        clock: Callable[[], float] | None = None,
        max_batch: float = STREAM_MAX_WINDOW,
        write_rate: float = 0.0,
    ) -> None:
        # ``clock``: seconds, the running loop's time unless given (a simulation's own clock);
        # ``max_batch``: the longest a growing stream's window gets (``--max-batch-period``)
        self._max_batch = max_batch
        # ``write_rate``: the client's QPS, which streams share (0: no limit, no sharing)
        self._streams = Streams(write_rate, max_batch)
        self._now = clock if clock is not None else asyncio.get_running_loop().time
        self._backoff = backoff
        self._bucket = TokenBucket(10.0, 100, clock=self._now)  # retries, on the queue's clock
        self._heap: list[tuple[float, int, str]] = []
        self._seq = itertools.count()
        self._ready_at: dict[str, float] = {}  # pending keys -> earliest ready time (loop time)
        self._processing: set[str] = set()
        self._dirty: dict[str, float] = {}  # added while processing -> earliest ready time
        self._failures: dict[str, int] = {}
        self._oldest_change: dict[str, float] = {}  # key -> wall time of oldest unsynced change
        self._in_flight_change: dict[str, float] = {}
        self._edges: dict[str, Edge] = {}  # leading-edge batching state per key
        self._last_start: dict[str, float] = {}  # key -> loop time its last sync started
        self._gets = 0
        self._waiters: deque[asyncio.Future[None]] = deque()  # workers parked in get()
        self._timer: asyncio.TimerHandle | None = None  # wakes one of them at ``_timer_due``
        self._timer_due = math.inf
        self._idle = asyncio.Event()
        self._idle.set()
        self._shutdown = False
        self.stats = QueueStats()

    # -- producers -------------------------------------------------------------------------

    def add(
        self, key: str, delay: float = 0.0, *, changed_at: float | None = None,
        batch: float | None = None, removal: bool = False, min_interval: float = 0.0,
    ) -> None:
        """Schedule ``key`` ``delay`` seconds from now (earlier schedules win).

        ``changed_at`` is the wall-clock time of the change that caused this add (or
        :data:`UNDATED`); the oldest one per key becomes the trigger time of the next sync.
        Adds without one (retries, status refreshes) carry no change and so never make a
        trigger time look older than it is.
        ``batch`` (seconds) asks for leading-edge batching instead of a fixed delay: at once if
        the key has not been synced within its window, else at its last sync + the window.
        ``removal`` marks a change that removes (or unreadies) an endpoint: no growing stream.
        ``min_interval`` (seconds) holds the key until that long after its last sync started.
        """
        if self._shutdown:
            return
        self.stats.adds += 1
        if changed_at is not None:  # a retry or a scheduled refresh is not a change
            prev = self._oldest_change.get(key)
            if prev is None or changed_at < prev:
                self._oldest_change[key] = changed_at
        now = self._now()
        if batch is not None and batch > 0:
            edge = self._edges.get(key)
            if edge is None:
                edge = self._edges[key] = Edge(batch, batch, self._max_batch)
            elif edge.base != batch:
                edge.base, edge.window = batch, max(batch, min(edge.window, edge.cap))
            delay = max(delay, edge.change(now, removal))
        elif delay <= 0 and min_interval <= 0 and (edge := self._edges.get(key)) is not None:
            edge.held = False  # asked for at once (a spec change): no settling for a burst
        if min_interval > 0:
            delay = max(delay, self._last_start.get(key, -math.inf) + min_interval - now)
        ready = now + max(0.0, delay)
        if key in self._processing:
            cur = self._dirty.get(key)
            if cur is None or ready < cur:
                self._dirty[key] = ready
            return
        self._schedule(key, ready)

    def add_rate_limited(self, key: str) -> float:
        """Retry ``key`` after its backoff (and the global bucket); returns the delay used."""
        failures = self._failures.get(key, 0)
        self._failures[key] = failures + 1
        self.stats.retries += 1
        delay = max(self._backoff.delay(failures), self._bucket.reserve())
        # A failed sync did not consume the change: keep its trigger time for the retry.
        if key in self._in_flight_change:
            changed = self._in_flight_change[key]
            self._oldest_change[key] = min(changed, self._oldest_change.get(key, changed))
        self.add(key, delay, changed_at=self._oldest_change.get(key))
        return delay

    def expedite(self, key: str) -> bool:
        """Retry a backing-off ``key`` now, keeping its failure count: the failures it waited
        for were the API server's, and the server is back. Not through the retry bucket: the
        failed syncs of an outage leave it tens of seconds in debt, and the caller already
        limits how often a key is expedited (controller/outage.py)."""
        if key not in self._ready_at or not self._failures.get(key):
            return False
        self._schedule(key, self._now())
        return True

    def throttled(self, key: str) -> None:
        """``key``'s sync that just finished had to wait for its rate-limit token (a stream
        held back by the client's limit: see :mod:`slicectl.controller.batching`)."""
        edge = self._edges.get(key)
        if edge is not None:
            edge.throttled(self._streams.share(self._now()))

    def forget(self, key: str) -> None:
        """Reset the backoff of ``key`` after a successful sync."""
        self._failures.pop(key, None)

    def failures(self, key: str) -> int:
        return self._failures.get(key, 0)

    # -- consumers -------------------------------------------------------------------------

    async def get(self) -> tuple[str, float, float | None]:
        """Wait for the next ready key; returns (key, seconds it waited past ready, trigger).

        The key is marked processing until :meth:`done`; ``trigger`` is the wall time of the
        oldest change this sync covers.
        """
        while True:
            if self._shutdown:
                raise ShutDown
            got = self.get_nowait()
            if got is not None:
                if (due := self.next_due()) is not None and due <= self._now():
                    self._wake_one()  # another key is ready: the next parked worker takes it
                return got
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            self._arm()
            try:
                await waiter
            except asyncio.CancelledError:
                if not waiter.cancelled():
                    self._wake_one()  # woken and cancelled at once: the wake-up is not lost
                with contextlib.suppress(ValueError):  # cancelled while parked
                    self._waiters.remove(waiter)
                raise

    def get_nowait(self) -> tuple[str, float, float | None] | None:
        """What :meth:`get` returns if a key is ready now (settling included), else None."""
        now = self._now()
        while (ready := self.next_due()) is not None:
            key = self._heap[0][2]
            if ready > now:
                return None
            heapq.heappop(self._heap)
            settled = self._settled(key, now)
            if settled > now:
                self._ready_at[key] = settled
                heapq.heappush(self._heap, (settled, next(self._seq), key))
                continue
            del self._ready_at[key]
            self._processing.add(key)
            self._edge_synced(key, now)
            trigger = self._oldest_change.pop(key, None)
            if trigger is not None:
                self._in_flight_change[key] = trigger
            return key, now - ready, trigger
        return None

    def next_due(self) -> float | None:
        """The clock time the next pending key is due (it may still settle), or None."""
        while self._heap:
            ready, _, key = self._heap[0]
            if self._ready_at.get(key) == ready:
                return ready
            heapq.heappop(self._heap)  # superseded by an earlier schedule
        return None

    def done(self, key: str) -> None:
        """Finish processing ``key``; if it was added meanwhile, schedule it again."""
        self._processing.discard(key)
        self._in_flight_change.pop(key, None)
        ready = self._dirty.pop(key, None)
        if ready is not None and not self._shutdown:
            self._schedule(key, ready)
        elif self.idle():
            self._idle.set()

    def clear(self) -> None:
        """Drop every pending key with its history (trigger times, backoff): a new leadership
        term starts from the caches, as a restart does. Keys being processed are kept."""
        self._heap.clear()
        self._ready_at.clear()
        self._dirty.clear()
        self._oldest_change.clear()
        self._failures.clear()
        if self.idle():
            self._idle.set()

    def shutdown(self) -> None:
        self._shutdown = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer, self._timer_due = None, math.inf
        while self._waiters:
            self._wake_one()

    # -- introspection ---------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._ready_at) + len(self._dirty)

    def due(self) -> int:
        """Pending keys whose time has come (client-go's queue depth): not those scheduled for
        later, in a batch window or a backoff, nor those re-added while being processed."""
        now = self._now()
        return sum(1 for ready in self._ready_at.values() if ready <= now)

    def pending(self, key: str) -> bool:
        return key in self._ready_at or key in self._dirty

    def processing(self, key: str) -> bool:
        return key in self._processing

    def idle(self) -> bool:
        return not self._ready_at and not self._processing and not self._dirty

    async def wait_idle(self) -> None:
        """Wait until nothing is pending or being processed."""
        await self._idle.wait()

    # -- internals -------------------------------------------------------------------------

    def _settled(self, key: str, now: float) -> float:
        """When a sync due by ``now`` may run: later while its held burst is still arriving."""
        edge = self._edges.get(key)
        if edge is None or key in self._failures:
            return now  # a retry is not a burst
        return edge.settled(now)

    def _edge_synced(self, key: str, now: float) -> None:
        edge = self._edges.get(key)
        if edge is not None:
            self._streams.synced(key, now, edge.streaming)
            edge.synced(now, self._streams.share(now))
        self._last_start[key] = now
        self._gets += 1
        if self._gets % _EDGE_PRUNE_EVERY == 0:  # forget keys quiet for longer than a window
            stale = [k for k, e in self._edges.items()
                     if now - e.last_sync > e.window and k not in self._ready_at
                     and k not in self._dirty and k not in self._processing]
            for k in stale:
                del self._edges[k]
            old = [k for k, t in self._last_start.items() if now - t > _LAST_START_KEEP]
            for k in old:
                del self._last_start[k]

    def _schedule(self, key: str, ready: float) -> None:
        self._idle.clear()
        cur = self._ready_at.get(key)
        if cur is not None and cur <= ready:
            return
        self._ready_at[key] = ready
        heapq.heappush(self._heap, (ready, next(self._seq), key))
        if ready <= self._now():
            self._wake_one()
        else:
            self._arm()

    # One parked worker is woken per key that turns ready, not all of them: a stream's held
    # syncs are looked at again every few tens of milliseconds (settling, a grown window's
    # pause), and waking every worker for each look made ten wake-ups per sync.

    def _wake_one(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    def _arm(self) -> None:
        """Keep a timer that wakes one parked worker when the next pending key is due."""
        due = self.next_due()
        if due is None or not self._waiters:
            return  # a worker that parks later arms it
        if self._timer is not None:
            if self._timer_due <= due:
                return  # it rings no later than needed; the worker it wakes re-arms
            self._timer.cancel()
        self._timer_due = due
        self._timer = asyncio.get_running_loop().call_later(
            max(0.0, due - self._now()) + TIMER_SLACK, self._ring)

    def _ring(self) -> None:
        self._timer, self._timer_due = None, math.inf
        self._wake_one()
