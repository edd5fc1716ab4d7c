"""Client-side API rate limit: one token bucket (qps, burst) shared by every request.

Reservation style, like Go's ``rate.Limiter.Wait``: a caller takes its token at once (the
balance may go negative) and sleeps until the bucket would have refilled to it, so waiters are
served in arrival order without a lock or a wake-up queue.
"""

from __future__ import annotations

import asyncio
import time


class TokenBucket:
    def __init__(self, qps: float, burst: int) -> None:
        self._rate = qps
        self._capacity = float(max(1, burst))
        self._tokens = self._capacity
        self._last = time.monotonic()

    async def acquire(self) -> None:
        """Wait for one token; a non-positive qps means unlimited."""
        if self._rate <= 0:
            return
        now = time.monotonic()
        self._tokens = min(self._capacity, self._tokens + (now - self._last) * self._rate)
        self._last = now
        self._tokens -= 1.0
        if self._tokens < 0:
            await asyncio.sleep(-self._tokens / self._rate)
