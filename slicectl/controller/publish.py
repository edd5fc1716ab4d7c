"""Status writes in the background, newest first-class, so they never hold up slice writes.

A sync decides *what* a selector's status should say (:mod:`slicectl.controller.status`); this
module decides *when* it goes out. Each selector has at most one status write in flight; a
newer status submitted meanwhile replaces any older one still waiting (only the latest matters),
and the requests use the API client's background lane, which only spends rate-limit tokens
that slice writes can spare.

A status write that fails for a reason that can pass (a 5xx, a 429 past the client's retries, a
connection error, a timeout, a 403 until RBAC is fixed) is retried with backoff (1 s doubling to
1 min) until it lands or a newer status for the same selector supersedes it: the next sync may
never come in steady state, so "left to the next sync" could leave the status wrong for good.
It is dropped when it cannot land (the selector is gone: 404; the patch is invalid: 422), when
this replica may no longer write (the new leader writes its own), and on a non-API exception
(a bug, logged).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import structlog

from slicectl.election.gate import NotLeading
from slicectl.kube.errors import ApiError, Invalid, NotFound
from slicectl.model.records import SelectorRecord

log = structlog.get_logger("slicectl.status")
RETRY_BASE = 1.0
RETRY_CAP = 60.0


def _retryable(exc: Exception) -> bool:
    if isinstance(exc, (NotFound, Invalid, NotLeading)):
        return False
    return isinstance(exc, (ApiError, aiohttp.ClientError, OSError, TimeoutError))

StatusWrite = Callable[[SelectorRecord, dict[str, Any]], Awaitable[None]]


class StatusPublisher:
    def __init__(self, write: StatusWrite) -> None:
        self._write = write
        self._pending: dict[str, tuple[SelectorRecord, dict[str, Any]]] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}

    def submit(self, key: str, selector: SelectorRecord, patch: dict[str, Any]) -> None:
        """Queue ``patch`` for ``key``, replacing an older one not yet sent."""
        self._pending[key] = (selector, patch)
        if key not in self._tasks:
            self._tasks[key] = asyncio.create_task(self._drain(key))

    def pending(self, key: str) -> bool:
        return key in self._pending or key in self._tasks

    async def _drain(self, key: str) -> None:
        failures = 0
        try:
            while key in self._pending:
                selector, patch = self._pending.pop(key)
                try:
                    await self._write(selector, patch)
                    failures = 0
                except Exception as exc:
                    if not _retryable(exc):
                        log.warning("status write failed; dropped", selector=key,
                                    error=str(exc))
                        continue
                    delay = min(RETRY_CAP, RETRY_BASE * 2.0 ** min(failures, 16))
                    failures += 1
                    log.warning("status write failed; retrying", selector=key, error=str(exc),
                                retry_in=delay, failures=failures)
                    self._pending.setdefault(key, (selector, patch))  # unless superseded
                    await asyncio.sleep(delay)
        finally:
            del self._tasks[key]

    async def flush(self) -> None:
        """Wait for every queued status write (used at shutdown and in tests)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks.values()), return_exceptions=True)

    async def close(self) -> None:
        for task in list(self._tasks.values()):
            task.cancel()
        await asyncio.gather(*list(self._tasks.values()), return_exceptions=True)
