"""Event loop lag: how late the loop wakes a task that slept a fixed interval.

Everything slicectl does (lease renewals, watch reading, probes) is a task on one event loop,
so the loop's scheduling delay is the first thing to look at when anything is slow. A small
monitor task sleeps ``interval`` seconds, measures the overshoot, records it into the
``slicectl_event_loop_lag_seconds`` histogram (through ``observe``) and keeps the recent
samples for the liveness check.

Liveness reads it as "the loop is broken", not "the loop was busy once": it fails only when a
lag above the threshold was seen within the last ``window`` seconds, and the window is short
(10 s by default) next to the kubelet's default tolerance (3 failed probes 10 s apart), so only
a loop that keeps stalling (a spin, a recurring multi-second block) gets the process
restarted; one long relist does not. A loop blocked outright cannot answer the probe at all,
which the kubelet counts as a failure by itself.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable

LagObserver = Callable[[float], None]


class LoopLagMonitor:
    def __init__(
        self, interval: float = 0.5, window: float = 10.0, observe: LagObserver | None = None
    ) -> None:
        self.interval = interval
        self.window = window
        self._observe = observe
        self._recent: deque[tuple[float, float]] = deque()  # (when, lag)
        self._last_tick = time.monotonic()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._last_tick = time.monotonic()
        self._task = asyncio.create_task(self._run(), name="loop-lag-monitor")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            self._tick(time.monotonic())

    def _tick(self, now: float) -> None:
        lag = max(now - self._last_tick - self.interval, 0.0)
        self._recent.append((now, lag))
        self._last_tick = now
        while self._recent and self._recent[0][0] < now - self.window:
            self._recent.popleft()
        if self._observe is not None:
            self._observe(lag)

    def max_lag(self) -> float:
        """The worst lag seen in the window, including an overdue tick that has not run yet."""
        now = time.monotonic()
        overdue = max(now - self._last_tick - self.interval, 0.0)
        recent = (lag for when, lag in self._recent if when >= now - self.window)
        return max(overdue, max(recent, default=0.0))
