"""Fault injection: what can go wrong between a client and a real API server, on demand.

Decides, per resource request, whether to add latency, answer 500 (InternalError) or 429
(TooManyRequests with Retry-After), and, on a timer or when asked, whether open watches are
dropped (their responses end cleanly, as when an apiserver restarts) or stalled (the connection
stays open and nothing, not even a bookmark, is sent for a while; events queued meanwhile are
delivered afterwards). A periodic stall lasts half its period. ``compact`` forgets the event
history, so watches and continue tokens from older resourceVersions get 410 Expired.
"""

from __future__ import annotations

import asyncio
import random
import time

from slicectl.sim import errors
from slicectl.sim.storage import Store
from slicectl.sim.watch import Watcher

TICK = 0.05


class Faults:
    def __init__(self, store: Store) -> None:
        self.latency_ms = 0.0
        self.error_rate = 0.0
        self.throttle_rate = 0.0
        self.drop_watches_every = 0.0
        self.stall_watches_every = 0.0
        self._store = store
        self._task: asyncio.Task[None] | None = None

    def _watchers(self) -> list[Watcher]:
        found: list[Watcher] = []
        for bucket in self._store.buckets.values():
            found.extend(w for w in bucket.watchers if isinstance(w, Watcher))
        return found

    def drop_watches(self) -> int:
        """End every open watch now; returns how many there were."""
        watchers = self._watchers()
        for watcher in watchers:
            watcher.close()
        return len(watchers)

    def stall_watches(self, seconds: float) -> int:
        """Send nothing on every open watch for ``seconds``; returns how many there were."""
        watchers = self._watchers()
        for watcher in watchers:
            watcher.stall(seconds)
        return len(watchers)

    def compact(self) -> None:
        self._store.compact()

    async def before_request(self) -> None:
        """Latency, then maybe a 500 or a 429, for one resource request."""
        if self.latency_ms > 0:
            await asyncio.sleep(self.latency_ms / 1000.0)
        if self.error_rate > 0 and random.random() < self.error_rate:
            raise errors.internal("injected fault")
        if self.throttle_rate > 0 and random.random() < self.throttle_rate:
            raise errors.too_many_requests(1)

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def _run(self) -> None:
        last_drop = last_stall = time.monotonic()
        while True:
            await asyncio.sleep(TICK)
            now = time.monotonic()
            if self.drop_watches_every <= 0:
                last_drop = now
            elif now - last_drop >= self.drop_watches_every:
                last_drop = now
                self.drop_watches()
            if self.stall_watches_every <= 0:
                last_stall = now
            elif now - last_stall >= self.stall_watches_every:
                last_stall = now
                self.stall_watches(self.stall_watches_every / 2)
