"""Token buckets: the client-side API rate limit, and any other "n per second, burst b" budget.

Reservation style, like Go's ``rate.Limiter``: :meth:`TokenBucket.reserve` takes a token at once
(the balance may go negative) and says how long the caller must wait for it, so waiters are
served in arrival order without a lock or a wake-up queue.

Background work (status writes, Events) must never delay the writes that matter (slices):
:meth:`TokenBucket.acquire_spare` only takes a token while the bucket holds more than a reserve
(half the burst, but never the whole of it: a burst of 1 keeps no reserve, and background takes
its token only when the bucket is full, so no foreground request is waiting), so under load
background requests wait and foreground requests keep the whole budget.

:class:`ThrottleTally` decides when waiting for tokens is worth telling the operator: when the
waits add up to a second within ``window`` seconds. A single long wait does that, and so do
the many short ones of workers that all wait for the bucket (five workers at 20 QPS never wait
more than a quarter of a second each, yet spend the whole time waiting).

:class:`RequestLimit` is the kube client's limit as its requests see it: a bucket whose every
wait is reported to a hook (metrics), and logged when foreground waits add up.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable

import structlog

RateLimitHook = Callable[[bool, float], None]  # (background, seconds waited for a token)

_log = structlog.get_logger()


class ThrottleTally:
    """Adds up waits for tokens; says when they amount to throttling worth a log line."""

    FLOOR = 0.001  # a shorter "wait" is the time a request with a token at hand takes

    def __init__(self, after: float = 1.0, window: float = 10.0, every: float = 30.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        # ``after`` seconds of waits within ``window`` seconds, said at most once per ``every``
        self._after, self._window, self._every = after, window, every
        self._clock = clock
        self._start = -math.inf  # when the current tally began
        self._waited = 0.0
        self._requests = 0
        self._said = -math.inf

    def add(self, seconds: float) -> tuple[float, int, float] | None:
        """Count a wait of ``seconds`` (one under ``FLOOR`` costs not even a clock read).
        Once the tally reaches ``after`` (and nothing was said for ``every``): (seconds
        waited, requests, seconds between the first and the last report), and the tally
        starts again."""
        if seconds < self.FLOOR:
            return None
        now = self._clock()
        if now - self._start > self._window:
            self._start, self._waited, self._requests = now, 0.0, 0
        self._waited += seconds
        self._requests += 1
        if self._waited < self._after or now - self._said < self._every:
            return None
        said = (self._waited, self._requests, now - self._start)
        self._said, self._start, self._waited, self._requests = now, -math.inf, 0.0, 0
        return said


class TokenBucket:
    def __init__(
        self, qps: float, burst: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._rate = qps
        self._capacity = float(max(1, burst))
        self._tokens = self._capacity
        self._clock = clock
        self._last = clock()

    def _refill(self) -> None:
        now = self._clock()
        self._tokens = min(self._capacity, self._tokens + (now - self._last) * self._rate)
        self._last = now

    def reserve(self) -> float:
        """Take one token now; return the seconds to wait before using it (0: go ahead)."""
        if self._rate <= 0:
            return 0.0
        self._refill()
        self._tokens -= 1.0
        return 0.0 if self._tokens >= 0 else -self._tokens / self._rate

    def refund(self) -> None:
        """Give back a token that :meth:`reserve` took and nobody used."""
        if self._rate <= 0:
            return
        self._refill()
        self._tokens = min(self._capacity, self._tokens + 1.0)

    def try_take(self) -> bool:
        """Take one token only if a whole one is there now (never borrows, never waits)."""
        self._refill()
        if self._tokens < 1.0:
            return False
        self._tokens -= 1.0
        return True

    def full(self) -> bool:
        """Refilled to its burst: a bucket in this state can be dropped and made anew."""
        self._refill()
        return self._tokens >= self._capacity

    async def acquire(self) -> None:
        """Wait for one token; a non-positive qps means unlimited."""
        await wait_for_token(self.reserve(), self.refund)

    async def acquire_spare(self) -> None:
        """Wait until a token can be taken while keeping half the burst for other callers
        (less when the burst is under 2, or background would never get a token)."""
        if self._rate <= 0:
            return
        reserve = min(self._capacity / 2, self._capacity - 1.0)
        while True:
            self._refill()
            if self._tokens - 1.0 >= reserve:
                self._tokens -= 1.0
                return
            await asyncio.sleep((reserve + 1.0 - self._tokens) / self._rate)


class RequestLimit:
    """One client's rate limit: tokens for its requests, every wait reported through
    ``on_wait``, foreground waits that add up also logged (:class:`ThrottleTally`)."""

    def __init__(self, qps: float, burst: int, on_wait: RateLimitHook | None = None) -> None:
        self._qps, self._burst = qps, burst
        self._bucket = TokenBucket(qps, burst)
        self._on_wait = on_wait
        self._throttling = ThrottleTally()  # foreground waits worth a log line

    async def take(self, background: bool) -> None:
        """Wait for a token (``background``: only one the bucket can spare)."""
        started = time.monotonic()
        await (self._bucket.acquire_spare() if background else self._bucket.acquire())
        self._waited(background, time.monotonic() - started)

    def reserve(self) -> float:
        """Take a foreground request's token now; the seconds until it may be used (the
        caller waits them, and they are reported as waited)."""
        wait = self._bucket.reserve()
        self._waited(False, wait)
        return wait

    def refund(self) -> None:
        """Give back a token :meth:`reserve` took and nobody used."""
        self._bucket.refund()

    def _waited(self, background: bool, seconds: float) -> None:
        """Report a token's wait; say so in the log when foreground requests spend long
        waiting for the limit (background ones wait for spare tokens by design)."""
        if self._on_wait is not None:
            self._on_wait(background, seconds)
        if background:
            return
        said = self._throttling.add(seconds)
        if said is not None:
            waited, requests, within = said
            _log.info("client_side_throttling", waited_s=round(waited, 3), requests=requests,
                      within_s=round(within, 3), qps=self._qps, burst=self._burst,
                      hint="requests wait for --kube-api-qps/--kube-api-burst, not the API "
                           "server; raise them if this persists")


async def wait_for_token(wait: float, refund: Callable[[], None]) -> None:
    """Wait the ``wait`` seconds a token just reserved needs; cancelled meanwhile, give it back
    with ``refund``: the request it was for never goes out, and Go's ``rate.Limiter.Wait``
    (client-go's) cancels its reservation when its context ends. Kept, the tokens of the
    writes waiting when a leadership term ended left the bucket in debt for the next term."""
    if wait <= 0:
        return
    try:
        await asyncio.sleep(wait)
    except asyncio.CancelledError:
        refund()
        raise
