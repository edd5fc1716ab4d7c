"""Status writes in the background, newest first-class, so they never hold up slice writes.

A sync decides *what* a selector's status should say (:mod:`slicectl.controller.status`); this
module decides *when* it goes out. Each selector has at most one status write in flight; a
newer status submitted meanwhile replaces any older one still waiting (only the latest matters),
and the requests use the API client's background lane, which only spends rate-limit tokens
that slice writes can spare. A failed status write is logged and left to the next sync.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import structlog

from slicectl.model.records import SelectorRecord

log = structlog.get_logger("slicectl.status")

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
        try:
            while key in self._pending:
                selector, patch = self._pending.pop(key)
                try:
                    await self._write(selector, patch)
                except Exception as exc:  # the next sync decides again
                    log.warning("status write failed", selector=key, error=str(exc))
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
