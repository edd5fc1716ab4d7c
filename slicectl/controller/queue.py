"""The work queue: which selector is synced next, and when.

Keys are selector keys (``namespace/name``). The rules are the client-go workqueue's, made
explicit because every one of them prevents a production bug:

* a key is never handed to two workers at once;
* a key added while it is being processed runs again after ``done`` (nothing is lost);
* a pending key is held once: adding it again keeps the *earliest* ready time (never a sliding
  window that a steady trickle could starve);
* batching is leading-edge (``add(..., batch=W)``): a change to a key that has not been synced
  for the window W is synced at once; only changes arriving within the window of the key's
  last sync wait, until that sync's start + window. So an isolated change costs no delay and a
  burst costs one sync per window. Within the window, too, a change is synced at once when it
  is *isolated*: it came ``SETTLE_GAP`` or more after the key's previous change, no change is
  held already, and the key's recent changes came ``BUSY_SPACING`` windows apart or more on
  average (an average of the gaps, the newest weighing ``SPACING_WEIGHT``, each counted as at
  most ``SPACING_CAP`` windows). Holding such a change saves a write only if another change
  to the same slice comes before the window ends, which for a key changing twice a second
  with a 100 ms window is a few percent of the time, while it costs the change up to the
  whole window; the start of a burst (changes milliseconds apart) and a busy key still wait.
  A key that keeps *growing* in a stream (before each of ``STREAM_SYNCS`` syncs in a row: at
  least ``STREAM_CHANGES`` changes since the last sync, none a removal: a scale-up, an initial
  creation) takes its *share of the client's write rate* as its window: the keys streaming
  now (a streaming sync within ``STREAM_HORIZON`` longest windows) times ``STREAM_WRITES``
  writes per sync, over the client's QPS (``write_rate``), at least W and at most the
  queue's ``max_batch`` (``--max-batch-period``, default ``STREAM_MAX_WINDOW``). One stream
  alone keeps W (at 20 QPS the client could write it every 62 ms); ten at once take 0.625 s
  each. Written more often than its share, a stream only queues for tokens, where its
  newcomers wait anyway, and spends the tokens other keys' writes need; written less often,
  its newcomers wait for a window the client did not need (a fixed 1 s window for every
  stream, before, cost a scale-up's newcomers 400 ms at p99 on a real server to save a
  few writes). A grown window ends early once its stream pauses:
  a held sync runs once the key has had no change for ``STREAM_PAUSE`` of its average gaps (at
  least W), if that comes before the window's end (a stream that goes on has no such pause,
  and the last newcomers of one that stopped gain nothing by waiting for the rest of a long
  window).
  A stream held back by the client's rate limit is recognised at once (:meth:`throttled`): a
  streaming sync that had to wait for its token takes its share without waiting for
  ``STREAM_SYNCS`` (in the benchmark's ``initial`` scenario, ten Deployments at once, the
  bucket is dry from half a second in, before three streaming syncs of each have gone out).
  Any sync at the window's end without such a stream puts the window back to W (a sync
  asked for sooner by something else does not count), and so do a quiet spell as long as
  the grown window and any removal, at once; so replacements (a rollout removes as many as
  it adds), scale-downs and independent changes keep the short window. 0 means no batching;
* a sync held by its window *settles*: if a change came less than ``SETTLE_GAP`` before the
  held sync is due, the burst is still arriving, and the sync waits for a gap that long, at
  most ``SETTLE_MAX`` past its due time (so it cannot starve). A burst of concurrent requests
  (a rollout step's 25 creations, each with its status write) then lands in one write instead
  of being cut in two by the window's edge, and its stragglers wait a few milliseconds instead
  of a whole further window. Once the held sync covers a burst (``STREAM_CHANGES`` changes
  or more), the gap it waits for is ``SETTLE_BURST_GAP``: a burst comes from a client that
  reacts to its own answers (a rollout deletes its old pods, then creates the next ones once
  the deletions returned), so one step has pauses of tens of milliseconds inside it, while
  independent changes almost never put three into one window. Leading-edge syncs never settle
  (an isolated change still costs no delay), a grown window waits for its stream's pause as
  above instead, and a key in mid-stream (its last sync streamed, and it holds a stream's
  worth of changes again) does not settle at all: a stream has no end to wait for, and
  settling it made each window of a scale-up up to ``SETTLE_MAX`` longer. Nor does a
  held sync whose changes have been *flowing*: no settling gap between them from before its
  window (from the change that took the leading edge, say) to its due time. That is a stream
  too, of additions or removals (a scale-down's deletions), with no end to wait for; settling
  it kept the changes of a stream's first window waiting up to ``SETTLE_MAX`` more, and every
  window of a scale-down twice as long. A burst that begins inside a window (a rollout step)
  has a gap before it and still settles;
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
the ``last-change-trigger-time`` the resulting write reflects.
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

from slicectl.kube.ratelimit import TokenBucket

# Leading-edge batching (the batching delay; the retry backoff below is a separate policy).
STREAM_CHANGES = 3  # changes since the last sync that make it streaming
STREAM_SYNCS = 3  # streaming syncs in a row (without a removal) that make a stream
STREAM_WRITES = 1.25  # writes per streaming sync (one in four crosses a slice boundary)
STREAM_MAX_WINDOW = 1.0  # a stream's window is at most this many seconds by default
STREAM_HORIZON = 1.5  # a key is streaming while its last streaming sync is this many of the
# longest windows old or less
STREAM_PAUSE = 8.0  # a stream with no change for this many of its average gaps has stopped
SETTLE_GAP = 0.02  # a held sync waits while changes still come closer together than this ...
SETTLE_MAX = 0.1  # ... for at most this long past its due time
SETTLE_BURST_GAP = 0.035  # the gap a held sync of STREAM_CHANGES changes or more waits for
BUSY_SPACING = 2.0  # a key whose changes come closer than this many windows apart is busy ...
SPACING_WEIGHT = 0.25  # ... by an average of its gaps that weighs the newest gap this much ...
SPACING_CAP = 10.0  # ... each gap counted as at most this many windows
TIMER_SLACK = 0.001  # loop timers keep whole milliseconds: one rung early would find nothing
_EDGE_PRUNE_EVERY = 1024  # gets between sweeps of the per-key batching state
_LAST_START_KEEP = 60.0  # seconds a key's last sync start is remembered for ``min_interval``


@dataclass(slots=True)
class _Edge:
    """Per-key batching state: when the key was last synced and its current window."""

    base: float
    window: float
    cap: float = STREAM_MAX_WINDOW  # the longest the window grows for a stream
    last_sync: float = -math.inf
    streak: int = 0  # streaming syncs in a row
    removal: bool = False  # a change since the last sync removed or unreadied an endpoint
    changes: int = 0  # changes since the last sync
    last_change: float = -math.inf  # loop time of the latest change
    held: bool = False  # a change since the last sync waited for the window
    spacing: float = math.inf  # average gap between changes (see the module doc), once known
    widest: float = 0.0  # the widest gap between changes since the last sync

    @property
    def grown(self) -> bool:
        """The window has grown for a stream of additions."""
        return self.window > self.base

    @property
    def longest(self) -> float:
        """The longest a growing stream's window gets: the cap, or W if longer."""
        return max(self.base, self.cap)

    @property
    def pause(self) -> float:
        """How long a growing stream must go without a change to be over: ``STREAM_PAUSE``
        of its average gaps, at least the base window."""
        return max(self.base, STREAM_PAUSE * self.spacing)

    @property
    def settle_cap(self) -> float:
        """The latest a held sync may settle to: ``SETTLE_MAX`` past the window's end."""
        return self.last_sync + self.window + SETTLE_MAX

    def change(self, now: float, removal: bool) -> float:
        """Count a change at ``now``; how long its sync waits for the window (0: at once)."""
        gap = now - self.last_change
        if self.grown and gap >= self.window:  # quiet for a whole grown window: stream over
            self.window, self.streak = self.base, 0
        busy = self.spacing < BUSY_SPACING * self.base  # judged by the changes before this one
        if gap != math.inf:
            counted = min(gap, SPACING_CAP * self.base)
            self.spacing = counted if self.spacing == math.inf else (
                self.spacing + SPACING_WEIGHT * (counted - self.spacing))
        self.changes += 1
        self.last_change = now
        self.widest = max(self.widest, gap)
        if removal:  # a removal never waits for a window grown for additions
            self.removal, self.window, self.streak = True, self.base, 0
        wait = max(0.0, self.last_sync + self.window - now)
        if wait > 0 and not (self.held or busy or gap < SETTLE_GAP or self.grown):
            self.last_sync, wait = -math.inf, 0.0  # isolated: synced as if the key were quiet
        if self.grown:  # a grown window is over once its stream pauses (_settled)
            wait = min(wait, self.pause)
        self.held = self.held or wait > 0
        return wait

    def synced(self, now: float, share: float = 0.0) -> None:
        """The key goes to a worker now: while a growing stream goes on, its window is
        ``share`` (its share of the client's write rate, seconds; see the module doc).

        A sync before the window is over was asked for by something else (a status refresh,
        a sync woken once the cache shows our last write): it says nothing about the stream,
        so it neither grows nor resets the window, and its changes count towards the next.
        """
        self.held = False
        early = now < self.last_sync + self.window
        self.last_sync = now
        if early and not self.removal:
            return
        self.widest = 0.0
        streaming = self.streaming
        self.removal = False
        self.changes = 0
        self.streak = self.streak + 1 if streaming else 0
        if self.streak >= STREAM_SYNCS:
            self.window = min(self.longest, max(self.base, share))
        elif not streaming:
            self.window = self.base

    def throttled(self, share: float) -> None:
        """The key's last sync had to wait for a rate-limit token: if it was a streaming sync
        and nothing was removed since, the stream takes at least its share of the client's
        rate now."""
        if self.streak > 0 and not self.removal:
            self.window = min(self.longest, max(self.window, self.base, share))
            self.streak = max(self.streak, STREAM_SYNCS)

    @property
    def streaming(self) -> bool:
        """The changes since the last sync stream: ``STREAM_CHANGES`` or more, no removal."""
        return self.changes >= STREAM_CHANGES and not self.removal

    @property
    def settle_gap(self) -> float:
        """The gap a held sync waits for: ``SETTLE_BURST_GAP`` once it covers a burst."""
        return SETTLE_BURST_GAP if self.changes >= STREAM_CHANGES else SETTLE_GAP

    def flowing(self, now: float) -> bool:
        """Changes have come with no settling gap since before the last sync, up to ``now``."""
        return max(self.widest, now - self.last_change) < self.settle_gap - TIMER_SLACK

    @property
    def mid_stream(self) -> bool:
        """The last sync was a streaming one and the changes held since stream on."""
        return self.streak > 0 and self.streaming


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
    processed: int = 0


class WorkQueue:
    """An asyncio delaying, deduplicating, rate-limited queue of string keys."""

    def __init__(
        self,
        backoff: Backoff = Backoff(),
        retry_bucket: TokenBucket | None = None,
        clock: Callable[[], float] | None = None,
        max_batch: float = STREAM_MAX_WINDOW,
        write_rate: float = 0.0,
    ) -> None:
        # ``clock``: seconds, the running loop's time unless given (a simulation's own clock);
        # ``max_batch``: the longest a growing stream's window gets (``--max-batch-period``)
        self._max_batch = max_batch
        # ``write_rate``: the client's QPS, which streams share (0: no limit, no sharing)
        self._write_rate = write_rate
        self._streams: dict[str, float] = {}  # streaming key -> its last streaming sync (oldest
        # first: a key that streams again moves to the end)
        self._now = clock if clock is not None else asyncio.get_running_loop().time
        self._backoff = backoff
        self._bucket = retry_bucket or TokenBucket(10.0, 100)
        self._heap: list[tuple[float, int, str]] = []
        self._seq = itertools.count()
        self._ready_at: dict[str, float] = {}  # pending keys -> earliest ready time (loop time)
        self._processing: set[str] = set()
        self._dirty: dict[str, float] = {}  # added while processing -> earliest ready time
        self._failures: dict[str, int] = {}
        self._oldest_change: dict[str, float] = {}  # key -> wall time of oldest unsynced change
        self._in_flight_change: dict[str, float] = {}
        self._edges: dict[str, _Edge] = {}  # leading-edge batching state per key
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

        ``changed_at`` is the wall-clock time of the change that caused this add; the oldest one
        per key becomes the trigger time of the next sync. Adds without one (retries, status
        refreshes) carry no change and so never make a trigger time look older than it is.
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
                edge = self._edges[key] = _Edge(batch, batch, self._max_batch)
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
        held back by the client's limit: see the module doc)."""
        edge = self._edges.get(key)
        if edge is not None:
            edge.throttled(self._share(self._now()))

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
            self.stats.processed += 1
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
        if edge is None or not edge.held or key in self._failures:
            return now  # a retry is not a burst
        if edge.grown:  # until its stream pauses, or the grown window's end
            return max(now, min(edge.last_change + edge.pause, edge.last_sync + edge.window))
        if edge.mid_stream or edge.flowing(now):
            return now  # a stream goes on: the window's end is as good a cut as any
        return max(now, min(edge.last_change + edge.settle_gap, edge.settle_cap))

    def _edge_synced(self, key: str, now: float) -> None:
        edge = self._edges.get(key)
        if edge is not None:
            self._streams.pop(key, None)  # a key that streams again moves to the end
            if edge.streaming:
                self._streams[key] = now
            edge.synced(now, self._share(now))
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

    def _share(self, now: float) -> float:
        """A streaming key's share of the client's write rate, in seconds between writes."""
        if self._write_rate <= 0:
            return 0.0
        horizon = STREAM_HORIZON * self._max_batch
        streams = self._streams
        while streams:
            first = next(iter(streams))
            if now - streams[first] <= horizon:
                break
            del streams[first]
        return len(streams) * STREAM_WRITES / self._write_rate

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
