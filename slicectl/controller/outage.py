"""Retries that waited out an API server outage go at once when the server answers again.

A key's retry backoff grows with its failures (1 s doubling to 5 min for syncs, to 1 min for
status writes), which is right when the key itself is the problem. When the API server was
unreachable (connection refused or reset, a timeout, a 5xx), every key that tried to write
during the outage has grown a long backoff that says nothing about the key: after a restart
of the API server a selector could stay stale for minutes while nothing else changes it.

This module decides which failing keys to retry early: those whose last failure was the
server's (:func:`server_side`) and happened before the server's latest answer. A key is retried
early at most once per ``guard`` (10 s), so a key whose own requests keep failing with a 5xx
(an admission webhook that rejects it, say) while the server answers everyone else costs one
request per 10 s, not a hot loop; its failure count is kept, so its next failure continues the
backoff where it was. Under a fault that loses only the answers to writes (the server answers
everything else), a failing key is thus retried every 10 s, and put right at most that long
after the fault ends.
"""

from __future__ import annotations

import math

from slicectl.kube.answers import server_side

EXPEDITE_GUARD = 10.0  # seconds between two early retries of the same key


class OutageRetries:
    """Per key: when its last server-side failure happened, and when it was last retried early.

    Times are monotonic seconds, the clock of :class:`slicectl.kube.answers.Answers`.
    """

    def __init__(self, guard: float = EXPEDITE_GUARD) -> None:
        self._guard = guard
        self._failed: dict[str, float] = {}
        self._expedited: dict[str, float] = {}

    def failed(self, key: str, exc: BaseException, now: float) -> None:
        if server_side(exc):
            self._failed[key] = now
        else:
            self._failed.pop(key, None)

    def succeeded(self, key: str) -> None:
        self._failed.pop(key, None)

    def __len__(self) -> int:
        return len(self._failed)

    def due(self, answered_at: float, now: float) -> list[str]:
        """Keys to retry now: they failed server-side before ``answered_at``, the last time the
        server answered, and were not retried early within the guard."""
        keys = [k for k, t in self._failed.items()
                if t < answered_at and now - self._expedited.get(k, -math.inf) >= self._guard]
        for key in keys:
            del self._failed[key]
            self._expedited[key] = now
        if len(self._expedited) > 4 * len(self._failed) + 1024:
            self._expedited = {k: t for k, t in self._expedited.items()
                               if now - t < self._guard}
        return keys
