"""Is the API server answering? The one signal that backoffs grown during an outage may end.

Retries back off while the API server fails (informers up to 30 s, syncs up to 5 min): right
while it is away, but after it is back a long backoff only leaves the caches and the slices
stale. Every request the client makes reports its outcome here; any HTTP answer below 500 (a
watch that opened, a write that landed, a 404 or a 409 too) proves the server is there and
working, except a 429: the server is there but asks its clients to slow down (API Priority
and Fairness), the moment not to cut anyone's backoff short. Callers waiting out a failure
ask to be woken by the first such answer after it, if the failure was the server's
(:func:`server_side`): a request the server refused (RBAC, a bad token, a resource it does not
serve) was answered, and other requests being answered says nothing about it.
:class:`EarlyResume` is such a backoff; each of its owners (an informer, a selector API's
look-up) ends one early at most once per ``EARLY_RESUME_GUARD``.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import random
import time

import aiohttp

from slicectl.kube.errors import ApiError

EARLY_RESUME_GUARD = 5.0  # seconds between two backoffs ended early by an answer (EarlyResume)
EARLY_RESUME_SPREAD = 0.2  # waiters resuming at one answer spread over this many seconds


class Answers:
    def __init__(self) -> None:
        self.last = -math.inf  # monotonic time of the last answer other than a 5xx or 429
        self._waiters: list[asyncio.Future[None]] = []

    def note(self, status: int) -> None:
        """One request finished with ``status`` (0: no answer at all)."""
        if not 0 < status < 500 or status == 429:
            return
        self.last = time.monotonic()
        if self._waiters:
            for waiter in self._waiters:
                if not waiter.done():
                    waiter.set_result(None)
            self._waiters.clear()

    async def after(self, since: float, within: float) -> bool:
        """Wait until the server answers a request after ``since`` (monotonic seconds), at most
        ``within`` seconds; whether it did."""
        if self.last > since:
            return True
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            async with asyncio.timeout(within):
                await waiter
            return True
        except TimeoutError:
            return False
        finally:
            with contextlib.suppress(ValueError):
                self._waiters.remove(waiter)


class EarlyResume:
    """Backoffs that the server's next answer may end, for one retrying owner."""

    def __init__(self, answers: Answers) -> None:
        self._answers = answers
        self._resumed = -math.inf  # when a backoff last ended early

    async def pause(self, delay: float, *, early: bool) -> None:
        """Back off ``delay`` seconds, or less if ``early`` (the server was away or struggling):
        once the server answers any request after this failure it is back, and a backoff grown
        while it was away would only keep a cache stale. Such an early end comes at most once
        per ``EARLY_RESUME_GUARD``, so a request that fails on its own while the server answers
        everyone else still backs off. A refusal (403, 401, 404) is never ended early: the
        server was there to answer it."""
        if not early:
            await asyncio.sleep(delay)
            return
        failed = time.monotonic()
        hold = self._resumed + EARLY_RESUME_GUARD - failed
        if hold >= delay:
            await asyncio.sleep(delay)
            return
        if hold > 0:
            await asyncio.sleep(hold)
        if await self._answers.after(failed, delay - max(hold, 0.0)):
            self._resumed = time.monotonic()
            await asyncio.sleep(random.uniform(0.0, EARLY_RESUME_SPREAD))


def server_side(exc: BaseException) -> bool:
    """Whether the failure says "the API server is away or struggling", not "this request is
    refused" (RBAC, credentials, a bad key, an unserved resource)."""
    seen: BaseException | None = exc
    for _ in range(8):  # the cause chain: SyncFailed from the client's error
        if seen is None:
            return False
        if isinstance(seen, ApiError):
            return seen.status >= 500
        if isinstance(seen, (aiohttp.ClientError, OSError, TimeoutError)):
            return True
        seen = seen.__cause__
    return False
