"""Status writes in the background, newest first-class, so they never hold up slice writes.

A sync decides *what* a selector's status should say (:mod:`slicectl.controller.status`); this
module decides *when* it goes out. Each selector has at most one status write in flight; a
newer status submitted meanwhile replaces any older one still waiting (only the latest matters),
and the requests use the API client's background lane, which only spends rate-limit tokens
that slice writes can spare.

A status write that fails for a reason that can pass (a 5xx or 429 the client did not resend:
without a ``Retry-After``, or past its resends; a connection error, a timeout, a 403 until RBAC
is fixed) is retried with backoff (1 s doubling to 1 min) until it lands or a newer status for
the same selector supersedes it: the next sync may never come in steady state, so "left to the
next sync" could leave the status wrong for good.
When the API server answers again after an outage, the writes that failed during it go at once
(:mod:`slicectl.controller.outage`). A status write is dropped when it cannot land (the
selector is gone: 404; the patch is invalid: 422) and on a non-API exception (a bug, logged).

A status write the write gate refuses (:class:`~slicectl.election.gate.NotLeading`) is held,
not dropped: the gate closes a little before a possible step-down and may reopen in the same
term (a late lease renewal), with no new start to sync every selector again, and nothing else
would write that status. Its sender parks until the gate opens, as the workers do (no retry
loop while this replica may not write), then sends the newest status pending for the selector.
If leadership was really lost, the new leader writes its own; should this replica lead again,
a held status that is not what the new term's sync wants is put right by that sync (or by the
echo of the held write, which is not what the sync wanted).

A bounded pool of senders drains the pending statuses in submission order, so a takeover that
syncs 10k selectors at once queues 10k small entries, not 10k tasks all waiting for tokens; a
selector backing off after a failure does not hold a sender.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import structlog

from slicectl.controller.outage import OutageRetries
from slicectl.election.gate import NotLeading
from slicectl.kube.errors import ApiError, Invalid, NotFound
from slicectl.model.records import SelectorRecord

log = structlog.get_logger("slicectl.status")
RETRY_BASE = 1.0
RETRY_CAP = 60.0
SENDERS = 4


def _retryable(exc: Exception) -> bool:
    if isinstance(exc, (NotFound, Invalid)):
        return False
    return isinstance(exc, (ApiError, aiohttp.ClientError, OSError, TimeoutError))


StatusWrite = Callable[[SelectorRecord, dict[str, Any]], Awaitable[None]]


class StatusPublisher:
    def __init__(self, write: StatusWrite, senders: int = SENDERS) -> None:
        self._write = write
        self._senders = max(1, senders)
        self._pending: dict[str, tuple[SelectorRecord, dict[str, Any]]] = {}  # FIFO by key
        self._in_flight: set[str] = set()
        self._failures: dict[str, int] = {}
        self._not_before: dict[str, float] = {}  # loop time a backing-off key may go again
        self._outage = OutageRetries()
        self._timers: set[asyncio.TimerHandle] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    def submit(self, key: str, selector: SelectorRecord, patch: dict[str, Any]) -> None:
        """Queue ``patch`` for ``key``, replacing an older one not yet sent."""
        self._pending[key] = (selector, patch)
        self._kick()

    def pending(self, key: str) -> bool:
        return key in self._pending or key in self._in_flight

    def _kick(self) -> None:
        # Only live senders count: one that has just left its loop stays in ``_tasks`` until
        # its done-callback runs, a loop iteration later, and will not look at _pending again.
        live = sum(not task.done() for task in self._tasks)
        if live < self._senders and self._next() is not None:
            task = asyncio.create_task(self._drain())
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def _next(self) -> str | None:
        now = asyncio.get_running_loop().time() if self._not_before else 0.0
        for key in self._pending:
            if key in self._in_flight:  # one write per selector at a time
                continue
            if self._not_before.get(key, 0.0) > now:  # backing off
                continue
            return key
        return None

    async def _drain(self) -> None:
        while (key := self._next()) is not None:
            selector, patch = self._pending.pop(key)
            self._not_before.pop(key, None)
            self._in_flight.add(key)
            refused: NotLeading | None = None
            try:
                await self._write(selector, patch)
                self._failures.pop(key, None)
                self._outage.succeeded(key)
            except NotLeading as exc:
                refused = exc
                self._pending.setdefault(key, (selector, patch))  # unless superseded
            except Exception as exc:
                self._failed(key, selector, patch, exc)
            finally:
                self._in_flight.discard(key)
            if refused is not None:  # module docstring: held until the gate opens again
                log.info("status write held until this replica may write again", selector=key)
                await refused.gate.wait_writable()

    def _failed(self, key: str, selector: SelectorRecord, patch: dict[str, Any],
                exc: Exception) -> None:
        if not _retryable(exc):
            self._failures.pop(key, None)
            self._outage.succeeded(key)  # nothing left to retry for it
            log.warning("status write failed; dropped", selector=key, error=str(exc))
            return
        self._outage.failed(key, exc, time.monotonic())
        failures = self._failures.get(key, 0)
        delay = min(RETRY_CAP, RETRY_BASE * 2.0 ** min(failures, 16))
        self._failures[key] = failures + 1
        log.warning("status write failed; retrying", selector=key, error=str(exc),
                    retry_in=delay, failures=failures + 1)
        self._pending.setdefault(key, (selector, patch))  # unless superseded
        loop = asyncio.get_running_loop()
        self._not_before[key] = loop.time() + delay
        timer = loop.call_later(delay, self._retry_due)
        self._timers.add(timer)

    def retry_after_outage(self, answered_at: float, now: float) -> None:
        """The API server answered at ``answered_at`` (monotonic): retry now the writes that
        failed server-side before that, whatever their backoff says."""
        if not len(self._outage):
            return
        due = [k for k in self._outage.due(answered_at, now) if k in self._pending]
        for key in due:
            self._not_before.pop(key, None)
        if due:
            self._kick()

    def _retry_due(self) -> None:
        now = asyncio.get_running_loop().time()
        self._timers = {t for t in self._timers if t.when() > now}
        self._kick()

    async def flush(self) -> None:
        """Wait for every queued status write, retries included (shutdown and tests); also for
        writes held while the write gate is closed, so bound it when the gate may stay so."""
        while self._tasks or self._pending:
            if self._tasks:
                await asyncio.gather(*list(self._tasks), return_exceptions=True)
            else:
                await asyncio.sleep(0.05)  # only keys backing off: their timers kick a sender
                self._kick()

    async def close(self) -> None:
        for timer in self._timers:
            timer.cancel()
        self._timers.clear()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*list(self._tasks), return_exceptions=True)
