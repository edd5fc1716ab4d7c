"""When a batched selector is due: the work queue's batching policy, one key's state at a time.

The queue (:mod:`slicectl.controller.queue`) keeps the workqueue's guarantees; this module
decides how long a change waits for others to share its write. :class:`Edge` is one key's
state, :class:`Streams` the keys streaming now, which share the client's write rate.

Batching is leading-edge (``WorkQueue.add(..., batch=W)``): a change to a key that has not been
synced for the window W is synced at once; only changes arriving within the window of the key's
last sync wait, until that sync's start + window. So an isolated change costs no delay and a
burst costs one sync per window. Within the window, too, a change is synced at once when it is
*isolated*: it came ``SETTLE_GAP`` or more after the key's previous change, no change is held
already, and the key's recent changes came ``BUSY_SPACING`` windows apart or more on average
(an average of the gaps, the newest weighing ``SPACING_WEIGHT``, each counted as at most
``SPACING_CAP`` windows). Holding such a change saves a write only if another change to the
same slice comes before the window ends, which for a key changing twice a second with a 100 ms
window is a few percent of the time, while it costs the change up to the whole window; the
start of a burst (changes milliseconds apart) and a busy key still wait.

A key that keeps *growing* in a stream (before each of ``STREAM_SYNCS`` syncs in a row: at
least ``STREAM_CHANGES`` changes since the last sync, none a removal: a scale-up, an initial
creation) takes its *share of the client's write rate* as its window: the keys streaming now (a
streaming sync within ``STREAM_HORIZON`` longest windows) times ``STREAM_WRITES`` writes per
sync, over the client's QPS (``write_rate``), at least W and at most the queue's ``max_batch``
(``--max-batch-period``, default ``STREAM_MAX_WINDOW``). One stream alone keeps W (at 20 QPS
the client could write it every 62 ms); ten at once take 0.625 s each. Written more often than
its share, a stream only queues for tokens, where its newcomers wait anyway, and spends the
tokens other keys' writes need; written less often, its newcomers wait for a window the client
did not need (a fixed 1 s window for every stream, before, cost a scale-up's newcomers 400 ms
at p99 on a real server to save a few writes).

A grown window ends early once its stream pauses: a held sync runs once the key has had no
change for ``STREAM_PAUSE`` of its average gaps (at least W), if that comes before the window's
end (a stream that goes on has no such pause, and the last newcomers of one that stopped gain
nothing by waiting for the rest of a long window).

A stream held back by the client's rate limit is recognised at once (:meth:`Edge.throttled`): a
streaming sync that had to wait for its token takes its share without waiting for
``STREAM_SYNCS`` (in the benchmark's ``initial`` scenario, ten Deployments at once, the bucket
is dry from half a second in, before three streaming syncs of each have gone out). Any sync at
the window's end without such a stream puts the window back to W (a sync asked for sooner by
something else does not count), and so do a quiet spell as long as the grown window and any
removal, at once; so replacements (a rollout removes as many as it adds), scale-downs and
independent changes keep the short window. 0 means no batching.

A sync held by its window *settles*: if a change came less than ``SETTLE_GAP`` before the held
sync is due, the burst is still arriving, and the sync waits for a gap that long, at most
``SETTLE_MAX`` past its due time (so it cannot starve). A burst of concurrent requests (a
rollout step's 25 creations, each with its status write) then lands in one write instead of
being cut in two by the window's edge, and its stragglers wait a few milliseconds instead of a
whole further window. Once the held sync covers a burst (``STREAM_CHANGES`` changes or more),
the gap it waits for is ``SETTLE_BURST_GAP``: a burst comes from a client that reacts to its
own answers (a rollout deletes its old pods, then creates the next ones once the deletions
returned), so one step has pauses of tens of milliseconds inside it, while independent changes
almost never put three into one window. Leading-edge syncs never settle (an isolated change
still costs no delay), a grown window waits for its stream's pause as above instead, and a key
in mid-stream (its last sync streamed, and it holds a stream's worth of changes again) does not
settle at all: a stream has no end to wait for, and settling it made each window of a scale-up
up to ``SETTLE_MAX`` longer. Nor does a held sync whose changes have been *flowing*: no
settling gap between them from before its window (from the change that took the leading edge,
say) to its due time. That is a stream too, of additions or removals (a scale-down's
deletions), with no end to wait for; settling it kept the changes of a stream's first window
waiting up to ``SETTLE_MAX`` more, and every window of a scale-down twice as long. A burst that
begins inside a window (a rollout step) has a gap before it and still settles.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# The batching delay (the queue's retry backoff is a separate policy).
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


@dataclass(slots=True)
class Edge:
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

    def settled(self, now: float) -> float:
        """When a sync due by ``now`` may run: later while its held burst is still arriving."""
        if not self.held:
            return now
        if self.grown:  # until its stream pauses, or the grown window's end
            return max(now, min(self.last_change + self.pause, self.last_sync + self.window))
        if self.mid_stream or self.flowing(now):
            return now  # a stream goes on: the window's end is as good a cut as any
        return max(now, min(self.last_change + self.settle_gap, self.settle_cap))


class Streams:
    """The keys streaming now, oldest streaming sync first, and their share of the client's
    write rate (``write_rate``, the client's QPS; 0: no limit, no sharing)."""

    def __init__(self, write_rate: float, max_window: float) -> None:
        self._write_rate = write_rate
        self._horizon = STREAM_HORIZON * max_window
        self._last: dict[str, float] = {}  # key -> its last streaming sync (a key that
        # streams again moves to the end)

    def synced(self, key: str, now: float, streaming: bool) -> None:
        """``key`` went to a worker at ``now``; ``streaming``: its changes streamed."""
        self._last.pop(key, None)
        if streaming:
            self._last[key] = now

    def share(self, now: float) -> float:
        """A streaming key's share of the client's write rate, in seconds between writes."""
        if self._write_rate <= 0:
            return 0.0
        last = self._last
        while last:
            first = next(iter(last))
            if now - last[first] <= self._horizon:
                break
            del last[first]
        return len(last) * STREAM_WRITES / self._write_rate
